"""A local account's second factor: its TOTP secret and its recovery codes."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class TotpDevice(models.Model):
    """The authenticator app a user set up (one per user: setting up another
    replaces it). The secret is kept as it is: checking a code needs it."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="totp_device")
    secret = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    # The time step (RFC 6238's T) of the last code accepted: a code is taken
    # by a conditional UPDATE raising it, so each code works once.
    last_step = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "TOTP device"

    def __str__(self) -> str:
        return f"TOTP device of {self.user}"


class RecoveryCode(models.Model):
    """One recovery code, kept as its digest (the code is shown once); using
    it deletes the row, so it works once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="recovery_codes")
    digest = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "digest"], name="recovery_code_user_digest_uniq")]

    def __str__(self) -> str:
        return f"recovery code of {self.user}"
