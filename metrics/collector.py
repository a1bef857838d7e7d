"""The service's figures, computed from the database at each scrape.

About ten statements, each one aggregate or one small read: the expiry
lateness histogram (one scan of the expired events), shares by state, the
history's counts by kind, the stored files, the unfinished uploads, the
webhook and notice queues, the daemon's lease.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Min, Q, Sum
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from expiry.window import policy_default_lifetime, refresh_interval_for
from health.daemon import expiry_daemon
from notices.claims import lead_is_on, owing_reminders
from sharing.models import Share, ShareEvent, SharingPolicy, StoredFile
from sharing.models.state import Status, due_q, servable_q
from uploads.models import Upload
from webhooks.models import WebhookDelivery, WebhookEndpoint

PREFIX = "microcloud"
# Upper bounds of the lateness buckets, in seconds: the daemon's expiries
# land well under a millisecond late; the wide ones catch a daemon that was
# down (shares ended by its catch-up on start).
LATENESS_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 300.0)
# Events a response makes, and those of a refused request the history keeps.
SENT_KINDS = (ShareEvent.Kind.DOWNLOADED, ShareEvent.Kind.RESUMED, ShareEvent.Kind.PREVIEWED)
REFUSED_KINDS = {ShareEvent.Kind.WRONG_PASSWORD.value: "wrong_password"}


class DatabaseCollector:
    """A prometheus_client collector; `clock` gives the scrape's time."""

    def __init__(self, clock=timezone.now):
        self.clock = clock

    def collect(self):
        now = self.clock()
        yield lateness_histogram()
        yield shares_by_state(now)
        yield from history_counts()
        yield from stored_files()
        yield from uploads_in_progress()
        yield from webhook_queue(now)
        yield from notice_queue(now)
        yield from expiry_lease(now)


def name(suffix: str) -> str:
    return f"{PREFIX}_{suffix}"


def lateness_histogram() -> HistogramMetricFamily:
    expired = ShareEvent.objects.filter(kind=ShareEvent.Kind.EXPIRED, lateness__isnull=False)
    counts = {
        f"le{n}": Count("id", filter=Q(lateness__lte=timedelta(seconds=b))) for n, b in enumerate(LATENESS_BUCKETS)
    }
    row = expired.aggregate(total=Count("id"), late=Sum("lateness"), **counts)
    buckets = [(repr(b), row[f"le{n}"]) for n, b in enumerate(LATENESS_BUCKETS)]
    buckets.append(("+Inf", row["total"]))
    total = row["late"].total_seconds() if row["late"] is not None else 0.0
    return HistogramMetricFamily(
        name("expiry_lateness_seconds"),
        "How long after its deadline each expiry by time was committed (from the shares' history).",
        buckets=buckets,
        sum_value=total,
    )


def shares_by_state(now: datetime) -> GaugeMetricFamily:
    """active; overdue (active, past its deadline: refused already, not yet
    ended by a daemon); ended, by how: expired, download_limit, unshared,
    file_deleted."""
    family = GaugeMetricFamily(name("shares"), "Shares by state.", labels=["state"])
    rows = Share.objects.order_by().values("status", "end_reason").annotate(n=Count("id"))
    overdue = Share.objects.filter(due_q(now)).count()
    states = {"active": 0, "overdue": overdue}
    for row in rows:
        if row["status"] == Status.ACTIVE:
            states["active"] += row["n"]
        else:
            state = row["end_reason"] or row["status"]
            states[state] = states.get(state, 0) + row["n"]
    states["active"] -= overdue
    for state, count in sorted(states.items()):
        family.add_metric([state], count)
    return family


def history_counts():
    rows = ShareEvent.objects.order_by().values("kind").annotate(n=Count("id"), sent=Sum("bytes"))
    by_kind = {str(row["kind"]): row for row in rows}
    downloads = CounterMetricFamily(name("downloads"), "Downloads started (responses from the first byte).")
    downloads.add_metric([], by_kind.get(ShareEvent.Kind.DOWNLOADED.value, {}).get("n", 0))
    yield downloads
    sent = CounterMetricFamily(
        name("download_bytes"),
        "Bytes of the ranges answered on public links, by kind of response (a client that left early got fewer).",
        labels=["kind"],
    )
    for kind in SENT_KINDS:
        sent.add_metric([kind.value], by_kind.get(kind.value, {}).get("sent") or 0)
    yield sent
    refusals = CounterMetricFamily(
        name("refusals"), "Requests to public links refused, by the reasons the history records.", labels=["reason"]
    )
    for kind, reason in REFUSED_KINDS.items():
        refusals.add_metric([reason], by_kind.get(kind, {}).get("n", 0))
    yield refusals


def stored_files():
    row = StoredFile.objects.aggregate(n=Count("id"), size=Sum("size"))
    yield GaugeMetricFamily(name("stored_files"), "Files stored (uploaded and not deleted).", value=row["n"])
    yield GaugeMetricFamily(name("stored_bytes"), "Bytes of the files stored.", value=row["size"] or 0)


def uploads_in_progress():
    row = Upload.objects.filter(finished_at__isnull=True).aggregate(n=Count("id"), received=Sum("offset"))
    yield GaugeMetricFamily(name("uploads_in_progress"), "Resumable uploads not finished yet.", value=row["n"])
    yield GaugeMetricFamily(
        name("upload_received_bytes"),
        "Bytes received so far by unfinished resumable uploads.",
        value=row["received"] or 0,
    )


def webhook_queue(now: datetime):
    pending = WebhookDelivery.objects.filter(delivered_at__isnull=True, endpoint__state=WebhookEndpoint.State.ACTIVE)
    row = pending.aggregate(n=Count("id"), oldest=Min("created_at"))
    yield GaugeMetricFamily(
        name("webhook_queue_deliveries"), "Webhook deliveries not yet made to active endpoints.", value=row["n"]
    )
    yield GaugeMetricFamily(
        name("webhook_queue_oldest_age_seconds"),
        "Age of the oldest of those deliveries (0 when there is none).",
        value=age(now, row["oldest"]),
    )


def notice_queue(now: datetime):
    depth = GaugeMetricFamily(name("notice_queue"), "Email notices due and not yet claimed.", labels=["kind"])
    oldest = GaugeMetricFamily(
        name("notice_queue_oldest_age_seconds"),
        "How long the oldest reminder due has waited (0 when there is none).",
        labels=["kind"],
    )
    lead = SharingPolicy.current().reminder_lead
    reminders, waited = 0, 0.0
    if lead_is_on(lead):
        row = (
            owing_reminders(now, lead)
            .filter(expires_at__lte=now + lead)
            .aggregate(n=Count("id"), first=Min("expires_at"))
        )
        reminders = row["n"]
        waited = age(now, row["first"] - lead if row["first"] is not None else None)
    first_downloads = Share.objects.filter(
        notify_first_download=True, first_download_notified_at__isnull=True, download_count__gt=0
    ).count()
    depth.add_metric(["reminder"], reminders)
    depth.add_metric(["first_download"], first_downloads)
    oldest.add_metric(["reminder"], waited)
    yield depth
    yield oldest


def expiry_lease(now: datetime):
    """Whether a daemon holds the lease, as /readyz sees it, and the shares
    its window holds by the database's account: those due within one
    refresh interval. The heap itself and its refresh times live in the
    daemon's process: not known here."""
    interval = settings.EXPIRY_REFRESH_INTERVAL or refresh_interval_for(policy_default_lifetime())
    window = Share.objects.filter(servable_q(now), expires_at__lte=now + timedelta(seconds=interval)).count()
    yield GaugeMetricFamily(
        name("expiry_window_shares"),
        "Active shares due within one refresh interval of the daemon: about what its heap holds.",
        value=window,
    )
    yield GaugeMetricFamily(
        name("expiry_refresh_interval_seconds"),
        "The daemon's refresh interval (setting or policy rule).",
        value=interval,
    )
    found = expiry_daemon(now)
    yield GaugeMetricFamily(
        name("expiry_daemon_up"),
        "1 while an expiry daemon holds its lease, as the web node sees it.",
        value=int(found["ok"]),
    )


def age(now: datetime, since: datetime | None) -> float:
    return max(0.0, (now - since).total_seconds()) if since is not None else 0.0
