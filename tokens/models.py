"""An API token: a name its owner gave it, an optional expiry, and the
SHA-256 digest of its key. The key itself is shown once, when the token is
issued, and never stored: whoever reads the database (a backup, a replica)
cannot call the API with what they find. A key has 256 random bits, so its
digest needs no salt nor a slow hash; it is looked up like the key was."""

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

KEY_BYTES = 32
NAME_MAX = 100


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def digest_of(key: str) -> str:
    """The stored form of `key` (also of a key made by DRF's authtoken,
    whose digests the migration kept)."""
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=NAME_MAX)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return self.name

    def is_live(self, now) -> bool:
        return self.expires_at is None or now < self.expires_at
