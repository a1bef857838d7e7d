"""A refresh reads its window a page at a time, between due batches.

The store's pages follow the expiry index's order (deadline, then id), so
shares sharing a deadline across a page boundary are each read once; the
scheduler expires a share that falls due while the window is still loading
before it reads the next page, and a steady stream of due shares cannot
starve the load. Real database, time pinned by freezegun.
"""

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from freezegun import freeze_time

from expiry.reminders import ReminderSchedule
from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from expiry.window import WindowLoad, read_window
from sharing.models import Share, SharingPolicy
from sharing.rows import where_sql

PAGE = 3


@pytest.fixture
def frozen():
    with freeze_time("2026-03-01 12:00:00") as frozen:
        yield frozen


def deadline_order(shares: list[Share]) -> list[int]:
    return [share.pk for share in sorted(shares, key=lambda share: (share.expires_at, share.pk))]


def read_pages(store: ShareStore, until: float) -> list[list[int]]:
    pages, after = [], None
    for _ in range(20):  # a resume that does not move on would read pages for ever
        page = store.load_window_page(until, after, PAGE)
        pages.append([deadline.share_id for deadline in page.deadlines])
        if page.after is None:
            return pages
        after = page.after
    raise AssertionError(f"no end to the window's pages: {pages[:5]} ...")


def test_pages_read_each_share_of_the_window_once_in_deadline_order(frozen, make_shares):
    # Four shares share a deadline: a page boundary falls among them.
    window = make_shares(2, 10) + make_shares(4, 20) + make_shares(1, 30)
    make_shares(2, 120)  # after the window's end
    assert make_shares(1, 15)[0].unshare()

    pages = read_pages(ShareStore(), time.time() + 60)

    assert [len(page) for page in pages] == [3, 3, 1]
    assert [pk for page in pages for pk in page] == deadline_order(window)


def test_a_window_of_whole_pages_ends_with_an_empty_one(frozen, make_shares):
    window = make_shares(6, 10)

    pages = read_pages(ShareStore(), time.time() + 60)

    assert pages == [deadline_order(window)[:3], deadline_order(window)[3:], []]


def test_a_page_resumes_from_the_deadline_as_stored(frozen, make_shares):
    """Text written by another program (here with a zero fraction, which
    Django leaves out) still resumes exactly: the key is the stored value,
    not one rebuilt from the converted datetime."""
    window = make_shares(4, 10)
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(Share._meta.db_table)
        cursor.execute(f"UPDATE {table} SET expires_at = %s", ["2026-03-01 12:00:10.000000"])

    pages = read_pages(ShareStore(), time.time() + 60)

    assert [pk for page in pages for pk in page] == sorted(share.pk for share in window)


def test_read_window_is_every_page(frozen, make_shares):
    window = make_shares(4, 10) + make_shares(3, 5)

    deadlines = read_window(ShareStore(), time.time() + 60, page=PAGE)

    assert [deadline.share_id for deadline in deadlines] == deadline_order(window)
    assert {deadline.expires_at for deadline in deadlines} == {share.expires_at.timestamp() for share in window}


def started(**options) -> ExpiryScheduler:
    """A scheduler past its catch-up, its first refresh begun (one page read);
    pages of PAGE rows unless `window_page_max` lets them grow."""
    options.setdefault("refresh_interval", 60)
    options.setdefault("window_page_max", PAGE)
    scheduler = ExpiryScheduler(ShareStore(bulk=False), clock=time.time, window_page=PAGE, **options)
    scheduler.step()  # catch-up
    scheduler.step()  # the refresh: its first page
    return scheduler


def test_a_refresh_reads_one_page_a_step_and_asks_for_no_wait_until_done(frozen, make_shares):
    window = make_shares(7, 10)
    scheduler = started()

    assert len(scheduler) == PAGE
    assert scheduler.seconds_until_next() == 0
    assert scheduler.step()
    assert len(scheduler) == 2 * PAGE
    assert scheduler.step()
    assert len(scheduler) == len(window)
    assert scheduler.seconds_until_next() == pytest.approx(10)


def test_a_share_due_while_the_window_loads_is_expired_before_the_next_page(frozen, make_shares):
    first = make_shares(PAGE, 5)
    make_shares(2 * PAGE, 10)
    scheduler = started()
    assert len(scheduler) == PAGE

    frozen.tick(5)
    assert scheduler.step()

    assert scheduler.stats.expired == PAGE
    assert Share.objects.filter(pk__in=[share.pk for share in first], status=Share.Status.EXPIRED).count() == PAGE
    assert len(scheduler) == 0  # no page was read: the due batch went first
    while scheduler.step():
        pass
    assert len(scheduler) == 2 * PAGE


def test_pages_and_due_batches_take_turns_while_the_window_loads(frozen, make_shares):
    make_shares(PAGE, 5)
    make_shares(3 * PAGE, 10)
    scheduler = started(batch_size=1)  # one share a batch: two stay due after each
    frozen.tick(5)

    expired_after_each_step = []
    for _ in range(4):
        scheduler.step()
        expired_after_each_step.append(scheduler.stats.expired)

    # batch, page, batch, page: the load goes on though shares are still due.
    assert expired_after_each_step == [1, 1, 2, 2]
    assert len(scheduler) == PAGE - 2 + 2 * PAGE


def test_a_later_refresh_reads_its_pages_too(frozen, make_shares):
    """Shares the first refresh did not see (inserted after it, with no
    notice) are read by the next one, page after page, and expired on time."""
    scheduler = started()
    while scheduler.step():
        pass
    late = make_shares(PAGE + 1, 60.5)  # past the first refresh, inside its overlap and the next window

    frozen.tick(60)
    while scheduler.step():
        pass
    assert all(scheduler.scheduled_deadline(share.pk) is not None for share in late)
    frozen.tick(0.5)
    scheduler.step()
    assert scheduler.stats.expired == PAGE + 1
    assert scheduler.stats.worst_lateness == 0


def test_a_reset_forgets_a_window_half_read(frozen, make_shares):
    shares = make_shares(2 * PAGE, 10)
    scheduler = started()

    scheduler.reset()
    scheduler.step()  # catch-up
    assert len(scheduler) == 0
    scheduler.step()  # a fresh refresh, from the window's start (not the old one's second page)

    first_page = deadline_order(shares)[:PAGE]
    assert all(scheduler.scheduled_deadline(pk) is not None for pk in first_page)
    assert len(scheduler) == PAGE


@pytest.mark.parametrize("minutes", [0, 30])
def test_a_share_renewed_before_its_page_is_read_is_scheduled_as_renewed(frozen, make_shares, minutes):
    """Each page reads the rows as they are then: a renewal committed while
    the window loads is what a later page finds (30 minutes: past the window)."""
    shares = make_shares(2 * PAGE, 10)
    scheduler = started()
    last = Share.objects.get(pk=deadline_order(shares)[-1])
    assert scheduler.scheduled_deadline(last.pk) is None
    assert last.set_expiry(timezone.now() + timedelta(seconds=20, minutes=minutes))

    while scheduler.step():
        pass

    last.refresh_from_db()
    assert scheduler.scheduled_deadline(last.pk) == (None if minutes else last.expires_at.timestamp())


def test_pages_leave_reminders_to_the_reminders_own_refresh(frozen, make_shares):
    """Reminders are read at the refresh with the rule of who owes one; the
    window's pages do not add one per share (here none is owed)."""
    policy = SharingPolicy.current()
    policy.reminder_lead = timedelta(hours=1)
    policy.save()
    shares = make_shares(3 * PAGE, 2 * 3600)
    Share.objects.filter(pk__in=[share.pk for share in shares]).update(remind_before_expiry=False)
    reminders = ReminderSchedule(send=lambda share_id: None)
    scheduler = started(reminders=reminders, refresh_interval=3 * 3600)

    while scheduler.step():
        pass

    assert len(scheduler) == 3 * PAGE
    assert len(reminders._heap) == 0


class TickingClock:
    """Each reading an eighth of a second after the one before: every page "takes" 0.125 s."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.125
        return self.now


def test_pages_double_while_there_is_room_and_drop_back_when_a_deadline_is_close(frozen, make_shares):
    window = make_shares(60, 10)
    load = WindowLoad(ShareStore(), time.time() + 60, page=PAGE, largest=4 * PAGE, clock=TickingClock())

    sizes = [len(load.next_page()) for _ in range(4)]  # no deadline to keep
    # Another page of 4 * PAGE rows would take 0.125 s: it needs more than 4 x that of room.
    sizes.append(len(load.next_page(room=0.5)))
    # A page twice as long as the last one's 0.125 s needs more than 4 x 0.25 s.
    sizes.append(len(load.next_page(room=1.0)))
    sizes.append(len(load.next_page(room=1.01)))
    sizes.append(len(load.next_page(room=1.01)))
    while not load.done:
        load.next_page()

    assert sizes == [PAGE, 2 * PAGE, 4 * PAGE, 4 * PAGE, PAGE, PAGE, 2 * PAGE, 4 * PAGE]
    assert load.rows == len(window)


def test_read_window_grows_its_pages(frozen, make_shares):
    window = make_shares(7 * PAGE - 1, 10)  # the third page is the last
    store = ShareStore()
    asked = []
    read_page = store.load_window_page
    store.load_window_page = lambda until, after, limit: asked.append(limit) or read_page(until, after, limit)

    deadlines = read_window(store, time.time() + 60, page=PAGE)

    assert asked == [PAGE, 2 * PAGE, 4 * PAGE]
    assert [deadline.share_id for deadline in deadlines] == deadline_order(window)


def test_the_scheduler_grows_its_pages_only_while_nothing_is_due(frozen, make_shares):
    make_shares(PAGE, 5)
    make_shares(20 * PAGE, 10)
    scheduler = started(batch_size=1, window_page_max=4 * PAGE)
    frozen.tick(5)  # the first page's shares are due: batches and pages of PAGE rows take turns

    sizes = []
    while scheduler.loading_window:
        before = len(scheduler) + scheduler.stats.expired
        scheduler.step()
        if scheduler.stats.expired == 0 or len(scheduler) + scheduler.stats.expired != before:
            sizes.append(len(scheduler) + scheduler.stats.expired - before)

    # While the first page's three shares fall due one a batch: pages of PAGE
    # rows; once none is due (the rest are 5 s off, frozen time): doubling.
    assert sizes[:2] == [PAGE, PAGE]
    assert sizes[2:5] == [2 * PAGE, 4 * PAGE, 4 * PAGE]
    assert scheduler.stats.expired == PAGE


def owing_reminders_scheduler(make_shares, count: int, **options) -> tuple[ExpiryScheduler, ReminderSchedule, list]:
    """`count` shares due in 2 hours that owe a reminder (lead 1 hour), one
    that asked for none, and a scheduler whose reminders start with pages of PAGE."""
    policy = SharingPolicy.current()
    policy.reminder_lead = timedelta(hours=1)
    policy.save()
    owing = make_shares(count, 2 * 3600)
    opted_out = make_shares(1, 2 * 3600)[0]
    Share.objects.filter(pk=opted_out.pk).update(remind_before_expiry=False)
    reminders = ReminderSchedule(send=lambda share_id: None, page=PAGE)
    return started(reminders=reminders, refresh_interval=3 * 3600, **options), reminders, owing


def test_reminders_owed_are_read_a_page_a_step_after_the_window(frozen, make_shares):
    scheduler, reminders, owing = owing_reminders_scheduler(make_shares, 3 * PAGE + 1)

    assert len(reminders) == PAGE  # the refresh read the first page of each
    assert reminders.loading
    assert scheduler.seconds_until_next() == 0
    steps = 0
    while (scheduler.loading_window or reminders.loading) and steps < 20:
        scheduler.step()
        steps += 1

    # The window's 11 shares: three more pages (started() keeps them at PAGE
    # rows); then the reminders' 10 in pages that double, nothing being
    # due: PAGE (read by the refresh), 2 x PAGE, and the one left.
    assert steps == 3 + 2
    assert {share.pk for share in owing} == set(reminders._heap._scheduled)
    first = min(share.expires_at.timestamp() for share in owing)
    assert reminders.next_time() == first - 3600
    assert scheduler.seconds_until_next() == pytest.approx(3600)


def test_a_due_expiry_goes_before_the_next_page_of_reminders(frozen, make_shares):
    due = make_shares(1, 5)[0]
    scheduler, reminders, _ = owing_reminders_scheduler(make_shares, 2 * PAGE, window_page_max=100)
    while scheduler.loading_window:
        scheduler.step()
    assert reminders.loading
    frozen.tick(5)

    loaded = len(reminders)
    scheduler.step()

    assert Share.objects.get(pk=due.pk).status == Share.Status.EXPIRED
    assert len(reminders) == loaded  # the page waited for the expiry
    scheduler.step()
    assert len(reminders) > loaded


def test_a_reset_forgets_the_reminders_half_read(frozen, make_shares):
    scheduler, reminders, _ = owing_reminders_scheduler(make_shares, 2 * PAGE)
    assert reminders.loading

    scheduler.reset()

    assert not reminders.loading
    assert len(reminders) == 0


def test_due_batches_and_pages_of_reminders_take_turns(frozen, make_shares):
    make_shares(PAGE, 5)
    scheduler, reminders, _ = owing_reminders_scheduler(make_shares, 4 * PAGE, batch_size=1, window_page_max=100)
    while scheduler.loading_window:
        scheduler.step()
    frozen.tick(5)  # one share a batch: two stay due after each
    before = len(reminders)  # none yet: the refresh's page held the shares due at 5 s, which owe none

    after_each_step = []
    for _ in range(4):
        scheduler.step()
        after_each_step.append((scheduler.stats.expired, len(reminders)))

    # batch, page, batch, page: the reminders' load goes on though shares are still due.
    expired = [step[0] for step in after_each_step]
    loaded = [step[1] for step in after_each_step]
    assert expired == [1, 1, 2, 2]
    assert loaded[0] == before
    assert loaded[1] > loaded[0]
    assert loaded[2] == loaded[1]
    assert loaded[3] > loaded[2]


def test_a_page_with_a_condition_reads_its_rows_whether_or_not_they_meet_it(frozen, make_shares):
    """A page asks the condition of each of its `limit` rows: a window where
    no share meets it is still read a page at a time (a filter would read it
    all in the first statement), and the wanted ones come out in order."""
    shares = make_shares(2 * PAGE + 1, 10)
    wanted = deadline_order(shares)[PAGE + 1 :: 2]
    only = where_sql(Share.objects.filter(pk__in=wanted))
    store, until = ShareStore(), time.time() + 60

    pages, after = [], None
    for _ in range(10):
        page = store.load_window_page(until, after, PAGE, only=only)
        pages.append([deadline.share_id for deadline in page.deadlines])
        after = page.after
        if after is None:
            break

    assert pages[0] == []  # none of the first PAGE rows is wanted, and the page ends there
    assert [pk for page in pages for pk in page] == wanted
    assert len(pages) == 3
