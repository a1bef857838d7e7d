"""A stored file's malware scan: its states, and the rule "a share holding
a file that may not be served yet is not served".

The rule sits beside the share's own (sharing.models.state) and, like it,
is written once in the forms the code needs: an SQL condition that the
download's one conditional UPDATE (and the quick path's statement) adds
to the share's rule, a Q for ORM queries, and a check for a file in hand.
Which states may be served is the scanning policy (settings SCAN_FAIL_OPEN
and SCAN_ABOVE_MAX, docs/scanning.md); the states themselves are written
here and by the scanning app, nowhere else.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import pgettext_lazy


class ScanState(models.TextChoices):
    # Scanning was off when the file came (or the file is older than
    # scanning): it is served as before.
    UNSCANNED = "unscanned", pgettext_lazy("scan state", "not scanned")
    PENDING = "pending", pgettext_lazy("scan state", "being checked")
    CLEAN = "clean", pgettext_lazy("scan state", "clean")
    INFECTED = "infected", pgettext_lazy("scan state", "infected")
    TOO_BIG = "too_big", pgettext_lazy("scan state", "too big to scan")
    FAILED = "failed", pgettext_lazy("scan state", "scan failed")


# States a failed try may turn into "failed": a file never cleared. A clean
# file whose rescan fails stays clean.
NOT_CLEARED = (ScanState.PENDING, ScanState.FAILED)

# The tables the SQL form reads (tests/test_scanning_rule.py checks them
# against the models, which sit on higher layers than this module).
ITEM_TABLE, FILE_TABLE = "sharing_shareitem", "sharing_storedfile"


def servable_states() -> tuple[str, ...]:
    """The scan states a file may be served in, as the policy stands."""
    states = [ScanState.UNSCANNED, ScanState.CLEAN]
    if settings.SCAN_FAIL_OPEN:
        states.append(ScanState.FAILED)
    if settings.SCAN_ABOVE_MAX == "serve":
        states.append(ScanState.TOO_BIG)
    return tuple(str(state) for state in states)


def scan_allows(scan_state: str) -> bool:
    """The rule for a file in hand."""
    return scan_state in servable_states()


def withheld_q(prefix: str = "") -> Q:
    """Files (reached through `prefix`, e.g. "files__") the rule withholds."""
    return ~Q(**{f"{prefix}scan_state__in": servable_states()})


def scans_allow_sql(connection, share_column: str = "id") -> str:
    """An SQL condition on a share row: none of its files is withheld.

    The states are our constants (never input), written in like the share
    rule's status; a share with no file passes (nothing to send anyway)."""
    quote = connection.ops.quote_name
    allowed = ", ".join(f"'{state}'" for state in servable_states())
    return (
        f"NOT EXISTS (SELECT 1 FROM {quote(ITEM_TABLE)} si JOIN {quote(FILE_TABLE)} sf ON sf.id = si.file_id "
        f"WHERE si.share_id = {share_column} AND sf.scan_state NOT IN ({allowed}))"
    )


def queue_rescan(files: models.QuerySet, now) -> int:
    """Queue `files` for a new scan at `now` (after a signature update);
    return how many. An infected file is left alone (its shares ended, its
    bytes are gone or set aside), and so is one already queued. A file keeps
    its state until its new verdict."""
    return (
        files.exclude(scan_state=ScanState.INFECTED)
        .filter(scan_due_at__isnull=True)
        .update(scan_due_at=now, scan_attempts=0, scan_claimed_at=None, scan_claimed_by="")
    )
