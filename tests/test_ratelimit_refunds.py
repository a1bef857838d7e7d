"""A refund gives back exactly one hit, whichever bucket it was counted in."""

import threading
import uuid
from datetime import timedelta

from freezegun import freeze_time

from ratelimit.limits import RateLimit
from tests.ratelimit_backends import backend  # noqa: F401  (fixture)


def ident() -> str:
    return uuid.uuid4().hex


def test_a_refund_of_a_hit_alone_in_its_bucket_gives_back_that_hit_only(backend):  # noqa: F811
    limit = RateLimit("t", limit=3, window=60)
    who = ident()
    with freeze_time("2026-05-01 10:00:00") as frozen:
        assert limit.hit(who).allowed
        assert limit.hit(who).allowed
        frozen.tick(timedelta(seconds=7))  # the next 6 s bucket
        assert limit.hit(who).allowed  # three counted, the last alone in its bucket
        limit.refund(who)  # two left
        assert [limit.hit(who).allowed for _ in range(3)] == [True, False, False]


def test_a_refund_after_the_bucket_turned_takes_from_the_bucket_it_was_counted_in(backend):  # noqa: F811
    limit = RateLimit("t", limit=2, window=60)
    who = ident()
    with freeze_time("2026-05-01 10:00:00") as frozen:
        assert limit.hit(who).allowed
        assert limit.hit(who).allowed
        frozen.tick(timedelta(seconds=7))
        assert not limit.hit(who).allowed  # counted, refused, undone: the new bucket is back at 0
        limit.refund(who)  # one of the two earlier hits
        assert [limit.hit(who).allowed for _ in range(2)] == [True, False]


def test_refunds_never_give_back_more_than_was_counted(backend):  # noqa: F811
    limit = RateLimit("t", limit=3, window=60)
    who = ident()
    assert limit.hit(who).allowed
    for _ in range(5):
        limit.refund(who)
    assert [limit.hit(who).allowed for _ in range(4)] == [True, True, True, False]


def test_racing_refunds_give_back_one_hit_each(backend):  # noqa: F811
    limit = RateLimit("t", limit=10, window=60)
    who = ident()
    assert all(limit.hit(who).allowed for _ in range(10))
    barrier = threading.Barrier(16)

    def refund():
        barrier.wait(10)
        limit.refund(who)

    threads = [threading.Thread(target=refund) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # Sixteen refunds of ten hits: everything back, nothing below zero.
    assert [limit.hit(who).allowed for _ in range(11)] == [True] * 10 + [False]
