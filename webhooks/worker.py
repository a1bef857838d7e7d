"""The delivery worker: claims due deliveries, sends them, records the answer.

A claim is a conditional UPDATE that sets claimed_until (a lease) on one due
row nobody holds; on PostgreSQL its sub-select takes the row FOR UPDATE SKIP
LOCKED, so several workers (one per runexpiry daemon, or runwebhooks) never
wait for one another nor send the same row at once. A worker killed mid-send
leaves its lease to lapse, and the row is sent again (at least once), with
the same webhook-id.

Order per share: a row is claimable only when no older undelivered row of the
same (endpoint, share) exists, so a share's events reach an endpoint in the
order they happened, each retried until it succeeds before the next is sent.

Isolation: WebhookThread sends up to WEBHOOK_CONCURRENCY deliveries at once,
at most one per endpoint (a claim skips the endpoints it is sending to), so a
receiver that hangs or drips holds one sender for at most WEBHOOK_TIMEOUT and
another owner's delivery goes out beside it.

A failed attempt (no 2xx, a network error, no whole answer within
WEBHOOK_TIMEOUT, a refused target) is retried after WEBHOOK_RETRY_BASE *
2^(attempts-1) seconds, capped at WEBHOOK_RETRY_MAX, and up to a quarter
more at random (endpoints that failed together do not retry in lockstep),
or after the receiver's Retry-After when that is longer (capped the same).
One still failing WEBHOOK_RETRY_WINDOW after its first failure marks its
endpoint failing, and so does a 410 Gone at once (the receiver says it is
gone for good); nothing more is sent to a failing endpoint until the owner
re-enables it.
"""

import email.utils
import http.client
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F
from django.utils import timezone

from sharing.signals import share_events_saved, shares_expired
from webhooks import backends, signing
from webhooks.fanout import ACTIVE, DELIVERY, ENDPOINT
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.payloads import payload
from webhooks.targets import TargetRefused, post, resolve

logger = logging.getLogger("webhooks")

USER_AGENT = "microcloud-webhooks/1"
# A failing loop (database down) waits this long at most between tries.
MAX_ERROR_BACKOFF = 30.0
# Retries wait up to this fraction longer than the back-off, at random.
JITTER = 0.25
GONE = 410
# Pokes (WebhookThread.poke) closer together than this are taken as one look:
# a burst of expiries or new shares costs at most ten looks a second.
POKE_MIN_GAP = 0.1


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed attempt, before jitter."""
    base, cap = settings.WEBHOOK_RETRY_BASE, settings.WEBHOOK_RETRY_MAX
    return timedelta(seconds=min(base * 2 ** min(attempts - 1, 60), cap))


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """A Retry-After header (seconds, or an HTTP date) as seconds from `now`;
    None when absent or not understood."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())


def retry_delay(attempts: int, retry_after: float | None, rng: random.Random) -> timedelta:
    """The wait before the next attempt: the back-off with jitter, or the
    receiver's Retry-After when longer, never past WEBHOOK_RETRY_MAX."""
    delay = backoff(attempts).total_seconds() * (1 + JITTER * rng.random())
    if retry_after is not None:
        delay = max(delay, retry_after)
    return timedelta(seconds=min(delay, settings.WEBHOOK_RETRY_MAX))


class DeliveryWorker:
    """Claims and sends deliveries on one database alias; `clock` (an aware
    datetime) is injectable so tests can move through a retry window."""

    def __init__(
        self,
        using: str = "default",
        clock: Callable[[], datetime] = timezone.now,
        rng: random.Random | None = None,
    ):
        self.using = using
        self.clock = clock
        self.rng = rng or random.Random()
        self.sent = 0
        self.failed = 0
        self.idle_mark = None  # see note_idle

    @property
    def connection(self):
        return connections[self.using]

    def _eligible(self, excluding: Collection[int]) -> str:
        others = f"AND d.endpoint_id NOT IN ({', '.join(['%s'] * len(excluding))}) " if excluding else ""
        return (
            f"SELECT d.id FROM {DELIVERY} d JOIN {ENDPOINT} ep ON ep.id = d.endpoint_id "
            f"WHERE d.delivered_at IS NULL AND d.next_attempt_at <= %s "
            f"AND (d.claimed_until IS NULL OR d.claimed_until <= %s) AND ep.state = '{ACTIVE}' {others}"
            f"AND NOT EXISTS (SELECT 1 FROM {DELIVERY} older WHERE older.endpoint_id = d.endpoint_id "
            f"AND older.share_id = d.share_id AND older.delivered_at IS NULL AND older.id < d.id) "
            f"ORDER BY d.next_attempt_at, d.id LIMIT 1"
        )

    def claim(self, excluding: Collection[int] = ()) -> tuple[int, datetime, int] | None:
        """Claim the next due delivery to an endpoint not in `excluding`;
        return (its id, the lease's end, its endpoint's id) or None."""
        connection = self.connection
        now = self.clock()
        until = now + timedelta(seconds=settings.WEBHOOK_CLAIM_SECONDS)
        stamp = connection.ops.adapt_datetimefield_value(now)
        pick, pick_params = self._eligible(excluding), [stamp, stamp, *excluding]
        with connection.cursor() as cursor:
            pick = backends.for_connection(connection).claim_pick(cursor, pick, pick_params)
            if pick is None:
                return None
            # A scalar sub-select: evaluated once (an IN could be re-run per
            # row), NULL when nothing is due. The outer WHERE repeats the
            # claim's condition: the UPDATE decides.
            cursor.execute(
                f"UPDATE {DELIVERY} SET claimed_until = %s WHERE id = ({pick}) "
                f"AND delivered_at IS NULL AND (claimed_until IS NULL OR claimed_until <= %s) "
                "RETURNING id, endpoint_id",
                [connection.ops.adapt_datetimefield_value(until), *pick_params, stamp],
            )
            row = cursor.fetchone()
        return None if row is None else (row[0], until, row[1])

    # --- idle looks ------------------------------------------------------------
    #
    # With nothing pending at all, a look can be skipped until another
    # connection commits, where the database tells that cheaply
    # (webhooks.backends: SQLite's data version). Only for a worker whose
    # connection nobody else writes deliveries through: WebhookThread's own.

    def note_idle(self) -> None:
        """After a look that claimed nothing: remember the database's mark if
        no undelivered row exists (where it keeps one), else forget it."""
        self.idle_mark = None
        self.idle_mark = backends.for_connection(self.connection).idle_mark(self.connection)

    def nothing_new(self) -> bool:
        """Whether the last look found nothing pending and no other
        connection has committed since (so the claim query can be skipped)."""
        if self.idle_mark is None:
            return False
        return backends.for_connection(self.connection).unchanged_since(self.connection, self.idle_mark)

    def run_once(self) -> bool:
        """Claim and send one delivery; return whether there was one."""
        claimed = self.claim()
        if claimed is None:
            return False
        delivery_id, until, _ = claimed
        self.deliver(delivery_id, until)
        return True

    def deliver(self, delivery_id: int, until: datetime) -> None:
        delivery = WebhookDelivery.objects.using(self.using).select_related("endpoint", "event").get(pk=delivery_id)
        body_object = delivery.payload if delivery.payload is not None else payload(delivery.event)
        body = json.dumps(body_object, separators=(",", ":")).encode()
        endpoint = delivery.endpoint
        sent_at = self.clock()
        headers = signing.headers(endpoint.secret, delivery.webhook_id, int(sent_at.timestamp()), body)
        headers.update({"Content-Type": "application/json", "User-Agent": USER_AGENT})
        status, retry_after, error = None, None, ""
        try:
            # Resolved and checked again at every send: DNS may have changed.
            answer = post(resolve(endpoint.url), body, headers, settings.WEBHOOK_TIMEOUT)
            status, retry_after = answer.status, retry_after_seconds(answer.retry_after, self.clock())
        except TargetRefused as refused:
            error = str(refused)
        except (OSError, http.client.HTTPException) as failure:
            error = f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__
        if status is not None and 200 <= status < 300:
            self._succeeded(delivery, status, body_object)
        else:
            self._failed(delivery, until, status, error or f"HTTP {status}", body_object, retry_after)

    def _succeeded(self, delivery: WebhookDelivery, status: int, body_object: dict) -> None:
        # Delivered is delivered, even if this worker's lease lapsed meanwhile.
        WebhookDelivery.objects.using(self.using).filter(pk=delivery.pk, delivered_at__isnull=True).update(
            delivered_at=self.clock(),
            attempts=F("attempts") + 1,
            claimed_until=None,
            first_failed_at=None,
            last_status=status,
            last_error="",
            payload=body_object,
        )
        self.sent += 1
        logger.debug("webhook %s delivered to %s (%d)", delivery.webhook_id, delivery.endpoint.url, status)

    def _failed(
        self, delivery, until: datetime, status: int | None, error: str, body_object: dict, retry_after=None
    ) -> None:
        now = self.clock()
        attempts = delivery.attempts + 1
        first_failed = delivery.first_failed_at or now
        gone = status == GONE
        give_up = gone or now - first_failed >= timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW)
        with transaction.atomic(using=self.using):
            # Only while the claim is still ours: a lapsed lease belongs to whoever took the row since.
            updated = (
                WebhookDelivery.objects.using(self.using)
                .filter(pk=delivery.pk, delivered_at__isnull=True, claimed_until=until)
                .update(
                    attempts=attempts,
                    next_attempt_at=now + retry_delay(attempts, retry_after, self.rng),
                    claimed_until=None,
                    first_failed_at=first_failed,
                    last_status=status,
                    last_error=error[:500],
                    payload=body_object,
                )
            )
            if updated and give_up:
                WebhookEndpoint.objects.using(self.using).filter(pk=delivery.endpoint_id, state=ACTIVE).update(
                    state=WebhookEndpoint.State.FAILING, failing_since=now
                )
        self.failed += 1
        logger.warning(
            "webhook %s to %s failed (attempt %d): %s%s",
            delivery.webhook_id,
            delivery.endpoint.url,
            attempts,
            error,
            ("; the receiver is gone: endpoint marked failing" if gone else "; endpoint marked failing")
            if give_up
            else "",
        )


class WebhookThread(threading.Thread):
    """Runs a DeliveryWorker until stopped: claims due deliveries, each to an
    endpoint it is not already sending to, and sends up to `concurrency` at
    once in a pool of threads; with none due, looks again every
    WEBHOOK_POLL_INTERVAL seconds (on SQLite a look with nothing pending and
    nothing committed since is one pragma, not a query:
    DeliveryWorker.nothing_new), or as soon as poke() is called. A stop
    request lets the sends in hand finish (each at most WEBHOOK_TIMEOUT).

    Idle without polling: when nothing at all is pending (SQLite: no
    undelivered row, so nothing can fall due by the clock) and something
    promises to poke it after every commit that may have added a delivery
    (`idle_wait` set; expiry.service does it: the daemon's watcher pokes
    when another process committed, and this process's own events and
    expiries poke through signals), the thread sleeps up to `idle_wait`
    instead of WEBHOOK_POLL_INTERVAL. Pokes closer than POKE_MIN_GAP are
    taken together, so a stream of them costs at most one look per gap.
    """

    def __init__(
        self,
        worker: DeliveryWorker | None = None,
        *,
        poll_interval: float | None = None,
        concurrency: int | None = None,
    ):
        super().__init__(name="webhooks", daemon=True)
        self.worker = worker or DeliveryWorker()
        self.poll_interval = settings.WEBHOOK_POLL_INTERVAL if poll_interval is None else poll_interval
        self.concurrency = settings.WEBHOOK_CONCURRENCY if concurrency is None else concurrency
        self.stop_requested = threading.Event()
        self.errors = 0
        self.skipped = 0  # idle looks answered by the data version alone
        self.in_flight: dict[Future, int] = {}  # each send in hand, and its endpoint
        self.sender_connections: set = set()  # the pool threads' own, closed at the end of run()
        self.senders_lock = threading.Lock()
        self.wake = threading.Event()
        self.idle_wait: float | None = None  # see the class docstring
        self.last_look = float("-inf")  # time.monotonic() of the last look
        self.looks = 0

    def stop(self) -> None:
        self.stop_requested.set()
        self.wake.set()

    def poke(self, **kwargs) -> None:
        """Look for new deliveries now (a signal receiver, hence **kwargs)."""
        self.wake.set()

    def poke_after_commit(self, using: str = "default", **kwargs) -> None:
        """share_events_saved is sent inside the transaction: poke once it commits."""
        transaction.on_commit(self.poke, using=using)

    def connect_pokes(self) -> None:
        """This process's own writes that may add deliveries poke the thread."""
        uid = f"webhook-poke-{id(self)}"
        share_events_saved.connect(self.poke_after_commit, dispatch_uid=uid, weak=False)
        shares_expired.connect(self.poke, dispatch_uid=uid, weak=False)

    def disconnect_pokes(self) -> None:
        uid = f"webhook-poke-{id(self)}"
        share_events_saved.disconnect(dispatch_uid=uid)
        shares_expired.disconnect(dispatch_uid=uid)

    def idle_pause(self) -> float:
        """How long to sleep after a look that left nothing in hand."""
        if self.idle_wait is not None and self.worker.idle_mark is not None:
            return max(self.idle_wait, self.poll_interval)
        return self.poll_interval

    def pause(self, seconds: float, *, clock=time.monotonic) -> None:
        """Sleep up to `seconds`, or until poked (or stopped)."""
        if self.wake.wait(seconds) and not self.stop_requested.is_set():
            gap = self.last_look + POKE_MIN_GAP - clock()
            if gap > 0:
                self.stop_requested.wait(gap)  # take the pokes of this gap together
        # Cleared before the next look: a poke from here on wakes the next pause.
        self.wake.clear()

    def _send(self, delivery_id: int, until: datetime) -> None:
        # The pool thread keeps its own connection from one send to the next
        # (a new one per send cost more than the send to a nearby receiver),
        # dropped like a request's when broken or older than CONN_MAX_AGE.
        connection = connections[self.worker.using]
        connection.close_if_unusable_or_obsolete()
        with self.senders_lock:
            self.sender_connections.add(connection)
        try:
            self.worker.deliver(delivery_id, until)
        finally:
            connection.close_if_unusable_or_obsolete()

    def _close_sender_connections(self) -> None:
        """After the pool has shut down: its threads are gone, their
        connections are closed from here."""
        with self.senders_lock:
            for connection in self.sender_connections:
                connection.inc_thread_sharing()
                try:
                    connection.close()
                finally:
                    connection.dec_thread_sharing()
            self.sender_connections.clear()

    def _claim_more(self, pool: ThreadPoolExecutor) -> None:
        """Fill the free senders with due deliveries to endpoints not in hand."""
        while len(self.in_flight) < self.concurrency and not self.stop_requested.is_set():
            claimed = self.worker.claim(excluding=sorted(set(self.in_flight.values())))
            if claimed is None:
                return
            delivery_id, until, endpoint_id = claimed
            self.in_flight[pool.submit(self._send, delivery_id, until)] = endpoint_id

    def _reap(self, done) -> None:
        for future in done:
            self.in_flight.pop(future)
            if future.exception() is not None:
                self.errors += 1
                logger.warning("webhook send failed", exc_info=future.exception())

    def run(self) -> None:
        failures = 0
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="webhook-send")
        if self.idle_wait is not None:
            self.connect_pokes()
        try:
            while not self.stop_requested.is_set():
                self.last_look = time.monotonic()
                self.looks += 1
                try:
                    if not self.in_flight and self.worker.nothing_new():
                        self.skipped += 1
                    else:
                        self._claim_more(pool)
                        if not self.in_flight:
                            self.worker.note_idle()
                    failures = 0
                    pause = self.idle_pause()
                    if self.in_flight:
                        # Back as soon as a send ends (a sender is free), or
                        # after a poll interval for deliveries that fell due.
                        done, _ = wait(self.in_flight, timeout=self.poll_interval, return_when=FIRST_COMPLETED)
                        self._reap(done)
                        continue
                except Exception:
                    self.worker.idle_mark = None  # look again in full next time
                    failures += 1
                    self.errors += 1
                    pause = min(0.1 * 2 ** min(failures, 10), MAX_ERROR_BACKOFF)
                    logger.warning(
                        "webhook step failed (%d in a row), retrying in %.1f s", failures, pause, exc_info=True
                    )
                    connections[self.worker.using].close()  # a broken connection is replaced on the next query
                    self.stop_requested.wait(pause)  # the back-off holds, pokes or not
                    continue
                self.pause(pause)
        finally:
            if self.idle_wait is not None:
                self.disconnect_pokes()
            pool.shutdown(wait=True)
            self._reap(list(self.in_flight))
            self._close_sender_connections()
            connections[self.worker.using].close()
