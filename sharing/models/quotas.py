"""Storage quotas: how many bytes each user's files may take.

A user's StorageAccount counts the bytes their stored files take (`used`)
and the bytes unfinished uploads have set aside (`reserved`). Every change
is one conditional UPDATE whose row count says whether it fitted, so two
uploads racing for the last free bytes cannot both win: the rule
(used + reserved + new <= quota) lives in the statement, not in a check
before it. The quota is the account's own when an admin set one, else the
sharing policy's default; none at all means unlimited.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Greatest
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from sharing.models.policy import SharingPolicy


class QuotaExceeded(ValidationError):
    """The bytes asked for do not fit in the owner's quota (the message says how much is free)."""

    def __init__(self, account: "StorageAccount", quota: int, needed: int):
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


class StorageAccount(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="storage"
    )
    used_bytes = models.PositiveBigIntegerField(default=0, editable=False, help_text="Bytes the user's files take.")
    reserved_bytes = models.PositiveBigIntegerField(
        default=0, editable=False, help_text="Bytes set aside for the user's unfinished uploads."
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


def _move(user_id: int, *, used: int = 0, reserved: int = 0, release: int = 0) -> None:
    """Add `used` and `reserved` bytes (giving back `release` reserved ones)
    if the result fits the quota, or raise QuotaExceeded."""
    account_of(user_id)
    policy = SharingPolicy.current()
    needed = used + reserved
    changed = (
        StorageAccount.objects.filter(_fits(needed, release, policy.default_quota_bytes), pk=user_id)
        .filter(reserved_bytes__gte=release)
        .update(used_bytes=F("used_bytes") + used, reserved_bytes=F("reserved_bytes") + reserved - release)
    )
    if not changed:
        account = StorageAccount.objects.get(pk=user_id)
        raise QuotaExceeded(account, account.quota(policy) or 0, needed)


def charge(user_id: int, size: int, *, from_reserved: int = 0) -> None:
    """Count a new file's `size` bytes as used (in the transaction that
    stores its row), turning `from_reserved` reserved bytes into it."""
    _move(user_id, used=size, release=from_reserved)


def reserve(user_id: int, size: int) -> None:
    """Set `size` bytes aside for an upload that has not arrived yet."""
    _move(user_id, reserved=size)


def release(user_id: int, size: int) -> None:
    """Give back bytes set aside for an upload that ended unfinished."""
    StorageAccount.objects.filter(pk=user_id).update(reserved_bytes=Greatest(F("reserved_bytes") - size, 0))


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
