"""The scan queue, in the database: claiming a due file, giving it back for
a later try, and recording a verdict under the claim.

A file is due while scan_due_at is set and past. A worker takes one with a
conditional UPDATE (due, and unclaimed or claimed longer ago than
SCAN_CLAIM_SECONDS) and its row count: of several workers exactly one gets
it. The claim is (worker id, claim time); a verdict or a release counts
only while that claim still holds, so a worker that lost its claim (it
stalled past SCAN_CLAIM_SECONDS and another took the file) records nothing.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from scanning.signals import file_cleared
from sharing.models import ScanState, StoredFile
from sharing.models.scans import NOT_CLEARED

# The verdicts that end a file's wait (an infected one ends it too, but the
# quarantine says so instead).
VERDICTS_CLEARING = (ScanState.CLEAN, ScanState.TOO_BIG)

# Due files looked at per claim: more than the workers that may race for them.
CANDIDATES = 8


@dataclass(frozen=True)
class Claim:
    file_id: int
    worker: str
    at: datetime

    def rows(self):
        """The file's row while this claim holds."""
        return StoredFile.objects.filter(pk=self.file_id, scan_claimed_by=self.worker, scan_claimed_at=self.at)


def due_q(now: datetime) -> Q:
    stale = now - timedelta(seconds=settings.SCAN_CLAIM_SECONDS)
    unclaimed = Q(scan_claimed_at__isnull=True) | Q(scan_claimed_at__lt=stale)
    return Q(scan_due_at__isnull=False, scan_due_at__lte=now) & unclaimed


def claim_next(worker: str, now: datetime, among=None) -> tuple[Claim, StoredFile] | None:
    """Take the file due longest (of `among`, a queryset, when given), or None."""
    due = (among if among is not None else StoredFile.objects.all()).filter(due_q(now))
    for pk in due.order_by("scan_due_at", "pk").values_list("pk", flat=True)[:CANDIDATES]:
        taken = (
            StoredFile.objects.filter(due_q(now), pk=pk)
            .exclude(scan_state=ScanState.INFECTED)
            .update(scan_claimed_at=now, scan_claimed_by=worker, scan_attempts=F("scan_attempts") + 1)
        )
        if taken:
            claim = Claim(pk, worker, now)
            stored = claim.rows().first()
            if stored is not None:
                return claim, stored
    return None


def retry_delay(attempts: int) -> float:
    """Seconds before try `attempts` + 1: SCAN_RETRY_BASE, doubling, at most SCAN_RETRY_MAX."""
    return min(settings.SCAN_RETRY_MAX, settings.SCAN_RETRY_BASE * 2 ** max(0, attempts - 1))


def release(claim: Claim, attempts: int, now: datetime) -> bool:
    """The try failed (clamd out of reach, or it refused the stream): due
    again after the back-off; after SCAN_FAILED_AFTER tries a file never
    cleared reads "failed". Return whether the claim still held."""
    later = now + timedelta(seconds=retry_delay(attempts))
    values = {"scan_due_at": later, "scan_claimed_at": None, "scan_claimed_by": ""}
    with transaction.atomic():
        failing = claim.rows().filter(scan_state__in=NOT_CLEARED)
        if attempts >= settings.SCAN_FAILED_AFTER and failing.update(scan_state=ScanState.FAILED, **values):
            return True
        return bool(claim.rows().update(**values))


def record(claim: Claim, state: str, now: datetime, signature: str = "") -> bool:
    """Record the verdict `state` under the claim (inside the caller's
    transaction for an infected file, whose quarantine follows). Return
    whether the claim still held (the verdict counts)."""
    with transaction.atomic():
        first_verdict = claim.rows().filter(scan_state__in=NOT_CLEARED).exists()
        recorded = claim.rows().update(
            scan_state=state,
            scan_signature=signature,
            scanned_at=now,
            scan_due_at=None,
            scan_claimed_at=None,
            scan_claimed_by="",
        )
        if recorded and first_verdict and state in VERDICTS_CLEARING:
            file_cleared.send(sender=StoredFile, file_id=claim.file_id)
    return bool(recorded)
