"""How much space an owner's files take, as the dashboard shows it."""

from dataclasses import dataclass

from sharing.models.quotas import usage


@dataclass(frozen=True)
class StorageSummary:
    used: int
    reserved: int
    quota: int | None  # None: unlimited
    free: int | None

    @property
    def percent_used(self) -> int | None:
        if not self.quota:
            return None
        return min(100, round(100 * (self.used + self.reserved) / self.quota))


def storage_of(user) -> StorageSummary:
    account = usage(user.pk)
    return StorageSummary(
        used=account.used_bytes, reserved=account.reserved_bytes, quota=account.quota(), free=account.free()
    )
