"""Expiry reminders: the daemon's second deadline per share.

A share that asks for a reminder (remind_before_expiry, the default) is
reminded at expires_at - lead, the sharing policy's reminder_lead (24 hours
by default; empty or 0 turns reminders off). The expiry scheduler keeps
these reminder times in a heap of their own beside its expiry heap, for the
same window, and feeds them from the same sources: its window refresh (plus
a read here of the shares whose reminder falls in the window, a page at a
time between the scheduler's other steps, as the expiry window is read),
its pick-up of rows written by others and their notices. The
expiry heap and its batches are untouched: a reminder step runs only when no
expiry is due, does at most REMINDER_BATCH claims, and never sends mail.

When a reminder time falls due the database decides, with one conditional
UPDATE per share (notices.claims.claim_reminder): a share renewed past it is
not due yet, one unshared, expired, opted out or already reminded (by
another daemon) is not owed one. Several daemons may hold the same entry
(PostgreSQL: they all run); the claim's row count says which one sends.
A deadline picked up after its reminder time is not scheduled (PICKUP_SLACK).
What the claim refused is read again and rescheduled when its reminder time
moved (renewal, a shorter lead). A claimed reminder goes to the mail worker
thread (notices.worker): sending never holds up an expiry.
"""

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from expiry.deadlines import WindowedSchedule
from expiry.notify import valid_deadline
from expiry.store import ShareStore, WindowPage, to_datetime
from expiry.window import WINDOW_PAGE, WINDOW_PAGE_MAX, WindowLoad
from notices.claims import claim_reminder, lead_is_on, owing_reminders, reminder_times
from notices.mail import send_reminder
from notices.worker import default_worker
from sharing.models import SharingPolicy
from sharing.rows import where_sql

logger = logging.getLogger("expiry")

# Claims per step (~0.2 ms each): the daemon looks at due expiries between steps.
REMINDER_BATCH = 50
# A deadline picked up (or announced) whose reminder time passed more than
# this long ago is not scheduled: the share was written after its reminder
# time, so it owes none (notices.claims.reminder_owed), and every share
# created with a lifetime under the lead would otherwise cost a refused claim.
# Pick-ups arrive well within this of the write; the window load is the backstop.
PICKUP_SLACK = 10.0


@dataclass
class ReminderStats:
    claimed: int = 0
    refused: int = 0


def _policy_lead() -> timedelta | None:
    return SharingPolicy.current().reminder_lead


def _send_by_mail(share_id: int) -> None:
    default_worker().submit(send_reminder, share_id)


class NoReminders:
    """No reminders (runexpiry --once, tests of the expiry alone)."""

    loading = False

    def reset(self) -> None:
        pass

    def refresh(self, now: float, window_end: float) -> int:
        return 0

    def schedule(self, share_id: int, expires_at: float) -> bool:
        return False

    notice = schedule

    def next_time(self) -> float:
        return math.inf

    def has_due(self, now: float) -> bool:
        return False


class ReminderSchedule(WindowedSchedule):
    def __init__(
        self,
        send: Callable[[int], None] | None = None,
        *,
        lead: Callable[[], timedelta | None] | None = None,
        batch: int = REMINDER_BATCH,
        clock: Callable[[], float] | None = None,
        page: int = WINDOW_PAGE,
        page_max: int = WINDOW_PAGE_MAX,
    ):
        super().__init__(batch=batch, clock=clock)
        self.page, self.page_max = page, page_max  # the pages' rows (expiry.window)
        self._load: WindowLoad | None = None  # the reminders being read, page by page
        self.send = send if send is not None else _send_by_mail
        self.read_lead = lead if lead is not None else _policy_lead
        self.lead: timedelta | None = None  # as of the last refresh or claim
        self.stats = ReminderStats()

    @property
    def _lead_seconds(self) -> float | None:
        return self.lead.total_seconds() if lead_is_on(self.lead) else None

    # --- feeding -------------------------------------------------------------

    def reset(self) -> None:
        super().reset()
        self._load = None

    def refresh(self, now: float, window_end: float) -> int:
        """Start loading the reminders due before `window_end` (the expiry
        window's end), read in the deadlines' order; load the first page.
        The scheduler reads the rest with load_page() while `loading`: one
        read of a day's window held every due share up (~0.45 s a 100,000
        shares, the "owes one" test being a function call per row on SQLite)."""
        self.lead = self.read_lead()
        self.window_end = window_end
        self._load = None
        lead = self._lead_seconds
        if lead is None:
            return 0
        pages = _OwingPages(self.clock, self.lead)
        self._load = WindowLoad(pages, window_end + lead, self.page, self.page_max, clock=self.clock)
        return self.load_page()

    @property
    def loading(self) -> bool:
        return self._load is not None

    def load_page(self, room: float = math.inf) -> int:
        """Schedule the next page of the reminders being loaded; return how
        many it pushed. `room`: seconds until the scheduler's next deadline."""
        load, lead = self._load, self._lead_seconds
        pushed = sum(self._push(d.share_id, d.expires_at - lead) for d in load.next_page(room))
        if load.done:
            self._load = None
        return pushed

    def schedule(self, share_id: int, expires_at: float) -> bool:
        """A share's (new) deadline, from a pick-up or a re-read: its
        reminder follows it. Whether one is owed at all is the claim's to say."""
        lead = self._lead_seconds
        if lead is None or expires_at - lead < self.clock() - PICKUP_SLACK:
            return False
        return self._push(share_id, expires_at - lead)

    def notice(self, share_id: int, expires_at: float) -> bool:
        """A deadline announced by another process: never later than an
        entry already held (notices may arrive out of order; the earlier
        entry is re-validated by its claim, and the pick-up read follows)."""
        lead = self._lead_seconds
        if lead is None or expires_at - lead < self.clock() - PICKUP_SLACK:
            return False
        current = self._heap.time_of(share_id)
        if current is not None and current <= expires_at - lead:
            return False
        return self._push(share_id, expires_at - lead)

    def _push(self, share_id: int, remind_at: float) -> bool:
        if not valid_deadline(share_id, max(remind_at, 0.0)):  # a forged notice
            return False
        if remind_at >= self.window_end:
            self._heap.forget(share_id)  # the refresh that covers it loads it
            return False
        return self._heap.push(share_id, remind_at)

    # --- work ----------------------------------------------------------------

    def run_due(self, now: float) -> int:
        """Claim up to `batch` due reminders and hand the claimed ones to
        `send`; return how many were claimed."""
        lead = self.read_lead()
        if lead != self.lead:
            # The policy changed: every reminder time moved. Reload the window.
            logger.info("reminder lead changed from %s to %s: reloading reminders", self.lead, lead)
            window_end = self.window_end
            self.reset()
            self.refresh(now, window_end)
            return 0
        due = self._pop_due(now)
        stamp = to_datetime(now)
        claimed, refused = 0, []
        try:
            while due:
                share_id = due[-1]
                if claim_reminder(share_id, stamp, lead):
                    claimed += 1
                    logger.info("reminder for share %s claimed", share_id)
                    self.send(share_id)
                else:
                    refused.append(share_id)
                due.pop()
        except BaseException:
            for share_id in due:  # not claimed: no reminder is lost
                self._push(share_id, now)
            raise
        self.stats.claimed += claimed
        if refused:
            self.stats.refused += len(refused)
            # Renewed since (or the lead shrank): follow the new reminder time.
            for share_id, remind_at in reminder_times(stamp, lead, share_ids=refused):
                if remind_at > now:
                    self._push(share_id, remind_at)
        return claimed

    def _pop_due(self, now: float) -> list[int]:
        due = self._heap.pop_due(now, self.batch)
        due.reverse()  # claimed from the end: earliest first
        return due


class _OwingPages:
    """The window's pages (ShareStore.load_window_page) of the shares that
    owe a reminder (notices.claims.owing_reminders), as of each page's time."""

    def __init__(self, clock: Callable[[], float], lead: timedelta):
        self.clock = clock
        self.lead = lead
        self.store = ShareStore()

    def load_window_page(self, until: float, after, limit: int) -> WindowPage:
        owing = where_sql(owing_reminders(to_datetime(self.clock()), self.lead))
        return self.store.load_window_page(until, after, limit, only=owing)
