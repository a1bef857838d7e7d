"""Storage quotas: how many bytes each user's files may take.

A user's StorageAccount counts the bytes their stored files take (`used`)
and the bytes unfinished uploads have set aside (`reserved`). Every change
is one conditional UPDATE whose row count says whether it fitted, so two
uploads racing for the last free bytes cannot both win: the rule
(used + reserved + new <= quota) lives in the statement, not in a check
before it. The quota is the account's own when an admin set one, else the
sharing policy's default; none at all means unlimited.

Strangers reserve too: someone holding one of the user's upload requests
sets bytes aside in the user's account (Reserver says who set them aside).
They never take the owner's last bytes unless the owner allowed it: a
request with a byte limit of its own (max_bytes) is that allowance, and its
uploads reserve as the owner's do; through a request without one, strangers'
unfinished reservations together stay within half of what the owner's
files and own reservations leave free, so the owner always keeps the other
half. The account also counts strangers' unfinished uploads, so a caller
can cap them (reserve's `strangers_at_most`). Both rules are in the one
conditional UPDATE that reserves.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Greatest
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from sharing.models.policy import SharingPolicy


class Reserver(models.TextChoices):
    """Who set an unfinished upload's bytes aside in its owner's account."""

    OWNER = "owner", "the owner"
    # A stranger, through an upload request with a byte limit: the owner allowed those bytes.
    CAPPED = "capped", "a stranger, within a request's byte limit"
    # A stranger, through an upload request without one: within half of what is free.
    UNCAPPED = "uncapped", "a stranger, through a request without a byte limit"


class QuotaExceeded(ValidationError):
    """The bytes asked for do not fit in the owner's quota (the message says
    how much is free: for a stranger's upload without the owner's allowance,
    what strangers may still set aside)."""

    def __init__(self, account: "StorageAccount", quota: int, needed: int, free: int | None = None):
        if free is None:
            free = max(0, quota - account.used_bytes - account.reserved_bytes)
        super().__init__(
            _(
                "Not enough storage: this file needs %(needed)s, and %(free)s of your %(quota)s are free. "
                "Delete files you no longer need, or ask an admin for more space."
            )
            % {"needed": filesizeformat(needed), "free": filesizeformat(free), "quota": filesizeformat(quota)},
            code="quota_exceeded",
        )
        self.free = free
        self.quota = quota


class StrangersAtLimit(Exception):
    """Strangers already hold the most unfinished uploads the owner's account takes from them at once."""

    def __init__(self, most: int):
        super().__init__(f"{most} unfinished uploads from strangers")
        self.most = most


class StorageAccount(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="storage"
    )
    used_bytes = models.PositiveBigIntegerField(default=0, editable=False, help_text="Bytes the user's files take.")
    reserved_bytes = models.PositiveBigIntegerField(
        default=0, editable=False, help_text="Bytes set aside for the user's unfinished uploads."
    )
    # Of reserved_bytes, those strangers set aside without the owner's
    # allowance (Reserver.UNCAPPED), and the unfinished uploads strangers hold.
    strangers_reserved_bytes = models.PositiveBigIntegerField(
        default=0,
        editable=False,
        help_text="Of the reserved bytes, those of strangers' uploads through requests without a byte limit.",
    )
    strangers_uploads = models.PositiveIntegerField(
        default=0, editable=False, help_text="Unfinished uploads strangers started through the user's upload requests."
    )
    quota_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="This user's quota in bytes; empty: the sharing policy's default quota."
    )

    class Meta:
        verbose_name = "storage account"

    def __str__(self) -> str:
        return f"storage of {self.user}"

    def quota(self, policy: SharingPolicy | None = None) -> int | None:
        """The quota that applies (None: unlimited)."""
        if self.quota_bytes is not None:
            return self.quota_bytes
        return (policy or SharingPolicy.current()).default_quota_bytes

    def free(self, policy: SharingPolicy | None = None) -> int | None:
        quota = self.quota(policy)
        return None if quota is None else max(0, quota - self.used_bytes - self.reserved_bytes)

    def free_for_strangers(self, quota: int) -> int:
        """What strangers may still set aside without the owner's allowance
        (_fits_for_strangers for this row)."""
        left = quota - self.used_bytes - self.reserved_bytes + self.strangers_reserved_bytes
        return max(0, left // 2 - self.strangers_reserved_bytes)


def account_of(user_id: int) -> StorageAccount:
    """The user's account, made on first use (get_or_create survives a race)."""
    return StorageAccount.objects.get_or_create(user_id=user_id)[0]


def _fits(needed: int, released: int, default: int | None) -> Q:
    """Rows where `needed` more bytes (after giving back `released` reserved
    ones) stay within the quota: the account's own, else `default` (None:
    unlimited)."""
    after = F("used_bytes") + F("reserved_bytes") - released + needed
    within_own = Q(quota_bytes__isnull=False, quota_bytes__gte=after)
    if default is None:
        return Q(quota_bytes__isnull=True) | within_own
    # used + reserved - released + needed <= default, with the columns on one side.
    room = Value(default - needed + released) - F("reserved_bytes")
    within_default = Q(quota_bytes__isnull=True, used_bytes__lte=room)
    return within_default | within_own


def _fits_for_strangers(needed: int, default: int | None) -> Q:
    """Rows where strangers may set `needed` more bytes aside without the
    owner's allowance: their reservations S, with these, stay within half of
    what the owner's files U and own reservations (R - S) leave of the quota
    Q, 2 (S + needed) <= Q - U - (R - S), that is U + R + S + 2 needed <= Q
    (which implies the quota's own rule, _fits)."""
    after = F("used_bytes") + F("reserved_bytes") + F("strangers_reserved_bytes") + 2 * needed
    within_own = Q(quota_bytes__isnull=False, quota_bytes__gte=after)
    if default is None:
        return Q(quota_bytes__isnull=True) | within_own
    room = Value(default - 2 * needed) - F("reserved_bytes") - F("strangers_reserved_bytes")
    within_default = Q(quota_bytes__isnull=True, used_bytes__lte=room)
    return within_default | within_own


def _given_back(size: int, by: str) -> dict:
    """The changes that give back a reservation of `size` bytes `by` made
    (never below zero: a reservation older than these columns was never counted in them)."""
    changes = {}
    if by != Reserver.OWNER:
        changes["strangers_uploads"] = Greatest(F("strangers_uploads") - 1, 0)
    if by == Reserver.UNCAPPED:
        changes["strangers_reserved_bytes"] = Greatest(F("strangers_reserved_bytes") - size, 0)
    return changes


def _move(user_id: int, *, used: int = 0, reserved: int = 0, release: int = 0, by: str = Reserver.OWNER) -> None:
    """Add `used` and `reserved` bytes (giving back `release` reserved ones,
    set aside `by` whom) if the result fits the quota, or raise QuotaExceeded."""
    account_of(user_id)
    policy = SharingPolicy.current()
    needed = used + reserved
    changes = _given_back(release, by) if release else {}
    changed = (
        StorageAccount.objects.filter(_fits(needed, release, policy.default_quota_bytes), pk=user_id)
        .filter(reserved_bytes__gte=release)
        .update(used_bytes=F("used_bytes") + used, reserved_bytes=F("reserved_bytes") + reserved - release, **changes)
    )
    if not changed:
        account = StorageAccount.objects.get(pk=user_id)
        raise QuotaExceeded(account, account.quota(policy) or 0, needed)


def charge(user_id: int, size: int, *, from_reserved: int = 0, reserved_by: str = Reserver.OWNER) -> None:
    """Count a new file's `size` bytes as used (in the transaction that
    stores its row), turning `from_reserved` reserved bytes (set aside
    `reserved_by` whom) into it."""
    _move(user_id, used=size, release=from_reserved, by=reserved_by)


def reserve(user_id: int, size: int, *, by: str = Reserver.OWNER, strangers_at_most: int | None = None) -> None:
    """Set `size` bytes aside for an upload that has not arrived yet, started
    `by` the owner or a stranger (Reserver). QuotaExceeded when they do not
    fit; StrangersAtLimit when a stranger's would make more than
    `strangers_at_most` unfinished uploads of strangers."""
    if by == Reserver.OWNER:
        _move(user_id, reserved=size)
        return
    account_of(user_id)
    policy = SharingPolicy.current()
    changes = {"reserved_bytes": F("reserved_bytes") + size, "strangers_uploads": F("strangers_uploads") + 1}
    if by == Reserver.UNCAPPED:
        room = _fits_for_strangers(size, policy.default_quota_bytes)
        changes["strangers_reserved_bytes"] = F("strangers_reserved_bytes") + size
    else:
        room = _fits(size, 0, policy.default_quota_bytes)
    counted = Q() if strangers_at_most is None else Q(strangers_uploads__lt=strangers_at_most)
    if StorageAccount.objects.filter(room, counted, pk=user_id).update(**changes):
        return
    account = StorageAccount.objects.get(pk=user_id)
    if strangers_at_most is not None and account.strangers_uploads >= strangers_at_most:
        raise StrangersAtLimit(strangers_at_most)
    quota = account.quota(policy) or 0
    free = account.free_for_strangers(quota) if by == Reserver.UNCAPPED else None
    raise QuotaExceeded(account, quota, size, free=free)


def release(user_id: int, size: int, *, by: str = Reserver.OWNER) -> None:
    """Give back bytes set aside (`by` whom) for an upload that ended unfinished."""
    StorageAccount.objects.filter(pk=user_id).update(
        reserved_bytes=Greatest(F("reserved_bytes") - size, 0), **_given_back(size, by)
    )


def refund(user_id: int, size: int) -> None:
    """A file of `size` bytes is gone. Never below zero: a file stored around
    charge() (the benchmark's seed writes rows itself) was never counted."""
    StorageAccount.objects.filter(pk=user_id).update(used_bytes=Greatest(F("used_bytes") - size, 0))


def check_room(user_id: int, size: int) -> None:
    """Raise QuotaExceeded if `size` more bytes do not fit now: an early
    answer before bytes are written, not a promise (charge() decides, in the
    transaction that stores the file's row)."""
    account = account_of(user_id)
    quota = account.quota()
    if quota is not None and account.used_bytes + account.reserved_bytes + size > quota:
        raise QuotaExceeded(account, quota, size)


def usage(user_id: int) -> StorageAccount:
    return account_of(user_id)
