"""The deadline heap reminders and uploads share: one current time per key,
stale entries skipped, earliest first, at most `limit` at a time."""

import math

from expiry.deadlines import DeadlineHeap


def test_a_rescheduled_key_comes_out_once_at_its_current_time():
    heap = DeadlineHeap()
    assert heap.push("a", 5.0)
    assert not heap.push("a", 5.0)  # already there, at that time
    assert heap.push("a", 9.0)  # moved: the entry at 5.0 is stale now
    heap.push("b", 7.0)
    assert len(heap) == 2
    assert heap.pop_due(6.0, limit=10) == []  # the stale head is skipped
    assert heap.pop_due(10.0, limit=10) == ["b", "a"]
    assert heap.next_time() == math.inf


def test_at_most_limit_keys_a_time_and_forgotten_ones_never():
    heap = DeadlineHeap()
    for n in range(5):
        heap.push(n, float(n))
    heap.forget(1)
    assert heap.has_due(4.0)
    assert heap.pop_due(4.0, limit=2) == [0, 2]
    assert heap.time_of(3) == 3.0
    assert heap.pop_due(4.0, limit=10) == [3, 4]
    assert not heap.has_due(100.0)
