"""Files, shares and the sharing policy: the rules of the product.

Every state change of a share is one conditional UPDATE whose row count says
whether it happened, so two requests (or a request and the expiry daemon)
racing for the same share can never both win. Writes happen inside
transaction.atomic(); on SQLite that begins with BEGIN IMMEDIATE (see
settings), so `now` is read while holding the write lock and `updated_at`
grows in commit order, which the expiry daemon's pick-up relies on.
"""

import hashlib
import mimetypes
import os
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models, transaction
from django.db.models import F, Q
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from sharing.signals import share_schedule_changed

SHARE_TOKEN_BYTES = 32  # 256 random bits; the issue asks for at least 128.


def new_share_token() -> str:
    return secrets.token_urlsafe(SHARE_TOKEN_BYTES)


def stored_file_path(instance, filename: str) -> str:
    # The original name lives in StoredFile.name; on disk a random name avoids
    # collisions and never lets a user choose a path.
    return f"files/{timezone.now():%Y/%m}/{uuid.uuid4().hex}"


class StoredFile(models.Model):
    # No single-column index: file_owner_created_idx starts with owner.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="files", db_index=False)
    content = models.FileField(upload_to=stored_file_path, max_length=255)
    name = models.CharField(max_length=255, help_text="The name the file was uploaded with.")
    size = models.PositiveBigIntegerField(help_text="Size in bytes.")
    content_type = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="file_owner_created_idx")]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def create_from_upload(cls, *, owner, upload) -> "StoredFile":
        """Store the uploaded bytes and their metadata, or neither."""
        digest = hashlib.sha256()
        size = 0
        for chunk in upload.chunks():
            digest.update(chunk)
            size += len(chunk)
        name = clean_file_name(upload.name)
        content_type = upload.content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        stored = cls(owner=owner, name=name, size=size, content_type=content_type, sha256=digest.hexdigest())
        stored.content.save(name, upload, save=False)
        try:
            stored.save()
        except BaseException:
            # The row never existed, so the bytes must not outlive it.
            stored.content.storage.delete(stored.content.name)
            raise
        return stored

    def delete_with_shares(self) -> int:
        """Unshare the file's active shares, delete the row, then the bytes.

        Return how many shares were unshared. The bytes go only once the
        transaction has committed, so a rollback never leaves a row without
        its file.
        """
        with transaction.atomic():
            now = timezone.now()
            unshared = self.shares.filter(status=Share.Status.ACTIVE).update(
                status=Share.Status.UNSHARED,
                end_reason=Share.EndReason.FILE_DELETED,
                ended_at=now,
                updated_at=now,
            )
            self.delete()  # the bytes follow on commit: delete_stored_bytes
        return unshared


@receiver(post_delete, sender=StoredFile, dispatch_uid="sharing.delete_stored_bytes")
def delete_stored_bytes(sender, instance: StoredFile, **kwargs) -> None:
    """Remove a deleted file's bytes once the deletion has committed.

    A receiver rather than code in delete_with_shares, so rows deleted by a
    cascade (a user deleted in admin) do not leave their bytes behind; on
    commit, so a rollback never leaves a row without its bytes.
    """
    storage, path = instance.content.storage, instance.content.name
    if path:
        transaction.on_commit(partial(storage.delete, path), using=kwargs.get("using"))


def clean_file_name(raw: str | None) -> str:
    name = os.path.basename((raw or "").replace("\\", "/")).strip()
    name = "".join(ch for ch in name if ch.isprintable())
    if not name:
        return "file"
    if len(name) > 255:
        stem, ext = os.path.splitext(name)
        name = stem[: 255 - len(ext[:20])] + ext[:20]
    return name


class ShareQuerySet(models.QuerySet):
    def servable(self, now: datetime):
        return self.filter(status=Share.Status.ACTIVE, expires_at__gt=now)

    def with_effective_status(self, status: str, now: datetime):
        """Filter by the status a client sees: an active share past its
        expiry is already expired, whether or not the daemon has got to it."""
        active, expired, unshared = Share.Status.ACTIVE, Share.Status.EXPIRED, Share.Status.UNSHARED
        if status == active:
            return self.servable(now)
        if status == expired:
            return self.filter(Q(status=expired) | Q(status=active, expires_at__lte=now))
        if status == unshared:
            return self.filter(status=unshared)
        return self.none()

    def expire_due(self, now: datetime) -> int:
        """Mark every share in this queryset that is due at `now` expired."""
        return self.filter(status=Share.Status.ACTIVE, expires_at__lte=now).update(
            status=Share.Status.EXPIRED,
            end_reason=Share.EndReason.EXPIRED,
            ended_at=now,
            updated_at=now,
        )


class Share(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        EXPIRED = "expired"
        UNSHARED = "unshared"

    class EndReason(models.TextChoices):
        EXPIRED = "expired"
        UNSHARED = "unshared"
        FILE_DELETED = "file_deleted", "file deleted"

    # SET_NULL: deleting a file keeps its (unshared) shares for history.
    file = models.ForeignKey(StoredFile, on_delete=models.SET_NULL, null=True, blank=True, related_name="shares")
    # No single-column index: share_owner_created_idx starts with owner.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="shares", db_index=False)
    token = models.CharField(max_length=64, unique=True, editable=False, default=new_share_token)
    created_at = models.DateTimeField(default=timezone.now)
    # Bumped by every write; the expiry daemon reads rows changed since its
    # last look to pick up shares created or renewed after its refresh.
    updated_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When the share stopped being active.")
    end_reason = models.CharField(max_length=12, choices=EndReason.choices, blank=True, default="")
    download_count = models.PositiveBigIntegerField(default=0)

    objects = ShareQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # runexpiry's window query: active shares expiring before T, in
            # order, read from the index alone (4 ms for 10k of 1e6 rows).
            models.Index(
                fields=["expires_at", "id"],
                condition=Q(status="active"),
                name="share_active_expiry_idx",
            ),
            # runexpiry's pick-up query: active shares written since its last look.
            models.Index(fields=["updated_at"], condition=Q(status="active"), name="share_active_updated_idx"),
            models.Index(fields=["owner", "-created_at"], name="share_owner_created_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(status="active", ended_at__isnull=True, end_reason="")
                    | Q(status="expired", ended_at__isnull=False, end_reason="expired")
                    | Q(status="unshared", ended_at__isnull=False, end_reason__in=["unshared", "file_deleted"])
                ),
                name="share_status_matches_end",
            ),
            models.CheckConstraint(condition=Q(expires_at__gt=F("created_at")), name="share_expires_after_creation"),
        ]

    def __str__(self) -> str:
        return f"share {self.pk} of {self.file or 'a deleted file'}"

    # --- reading ----------------------------------------------------------

    def is_servable(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.status == self.Status.ACTIVE and self.expires_at > now

    def effective_status(self, now: datetime | None = None) -> str:
        if self.status == self.Status.ACTIVE and not self.is_servable(now):
            return self.Status.EXPIRED
        return self.status

    @property
    def lateness(self) -> timedelta | None:
        """How long after its deadline the expiry daemon committed the expiry."""
        if self.status != self.Status.EXPIRED or self.ended_at is None:
            return None
        return self.ended_at - self.expires_at

    # --- writing: each one conditional UPDATE -------------------------------

    @classmethod
    def create_for(cls, *, file: StoredFile, expires_at: datetime) -> "Share":
        with transaction.atomic():
            now = timezone.now()
            if expires_at <= now:
                # Only when waiting for the write lock outlasted a very short
                # lifetime; the CHECK constraint would refuse the row anyway.
                raise ValidationError({"expires_at": "The deadline passed before the share could be created."})
            share = cls.objects.create(
                file=file, owner=file.owner, expires_at=expires_at, created_at=now, updated_at=now
            )
            transaction.on_commit(partial(_announce, share.pk, expires_at))
        return share

    def set_expiry(self, expires_at: datetime) -> bool:
        """Renew or shorten an active share that has not expired yet.

        Return False (and change nothing) when the share is no longer active,
        including when its deadline has passed before this commit (a renewal
        never resurrects an expired link), or when the new deadline itself has
        already passed by the time the write lock was ours.
        """
        with transaction.atomic():
            now = timezone.now()
            if expires_at <= now:
                return False
            changed = Share.objects.servable(now).filter(pk=self.pk).update(expires_at=expires_at, updated_at=now)
            if changed:
                transaction.on_commit(partial(_announce, self.pk, expires_at))
        self.refresh_from_db()
        return bool(changed)

    def unshare(self, reason: str = EndReason.UNSHARED) -> bool:
        """End an active share now. Return False if it had already ended."""
        with transaction.atomic():
            now = timezone.now()
            changed = (
                Share.objects.servable(now)
                .filter(pk=self.pk)
                .update(status=self.Status.UNSHARED, end_reason=reason, ended_at=now, updated_at=now)
            )
        self.refresh_from_db()
        return bool(changed)

    def count_download(self, now: datetime | None = None) -> bool:
        """Count one download if the share is servable at `now`.

        Check and increment are one UPDATE, so a download racing an unshare
        either commits first (and is served) or sees the unshare (and is not).
        """
        now = now or timezone.now()
        changed = Share.objects.servable(now).filter(pk=self.pk).update(download_count=F("download_count") + 1)
        return bool(changed)


def _announce(share_id: int, expires_at: datetime) -> None:
    share_schedule_changed.send(sender=Share, share_id=share_id, expires_at=expires_at)


class SharingPolicy(models.Model):
    """The one row of admin-editable sharing rules (defaults without it)."""

    SINGLETON_ID = 1

    default_lifetime = models.DurationField(
        default=timedelta(days=7),
        validators=[MinValueValidator(timedelta(seconds=1))],
        help_text="Lifetime of a share created without expires_in or expires_at.",
    )
    max_lifetime = models.DurationField(
        default=timedelta(days=30),
        validators=[MinValueValidator(timedelta(seconds=1))],
        help_text="Longest lifetime a share may be given, at creation or renewal.",
    )

    class Meta:
        verbose_name = "sharing policy"
        verbose_name_plural = "sharing policy"
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="sharing_policy_single_row"),
            models.CheckConstraint(
                condition=Q(default_lifetime__lte=F("max_lifetime")), name="sharing_policy_default_within_max"
            ),
        ]

    def __str__(self) -> str:
        return "Sharing policy"

    def save(self, *args, **kwargs):
        self.pk = self.SINGLETON_ID
        super().save(*args, **kwargs)

    def clean(self):
        if self.default_lifetime and self.max_lifetime and self.default_lifetime > self.max_lifetime:
            raise ValidationError({"default_lifetime": "The default lifetime cannot exceed the maximum lifetime."})

    @classmethod
    def current(cls) -> "SharingPolicy":
        return cls.objects.filter(pk=cls.SINGLETON_ID).first() or cls(pk=cls.SINGLETON_ID)

    def resolve_expires_at(
        self, *, now: datetime, expires_in: int | None = None, expires_at: datetime | None = None
    ) -> datetime:
        """Turn a request's expires_in / expires_at into a deadline.

        Raise ValidationError naming the offending field. Neither given means
        the default lifetime; both given is an error.
        """
        if expires_in is not None and expires_at is not None:
            raise ValidationError({"expires_in": "Give expires_in or expires_at, not both."})
        if expires_in is not None:
            if isinstance(expires_in, bool) or not isinstance(expires_in, int) or expires_in <= 0:
                raise ValidationError({"expires_in": "expires_in must be a positive whole number of seconds."})
            field, lifetime = "expires_in", timedelta(seconds=expires_in)
        elif expires_at is not None:
            if timezone.is_naive(expires_at):
                expires_at = timezone.make_aware(expires_at, UTC)
            if expires_at <= now:
                raise ValidationError({"expires_at": "expires_at must be in the future."})
            field, lifetime = "expires_at", expires_at - now
        else:
            return now + self.default_lifetime
        if lifetime > self.max_lifetime:
            limit = format_duration(self.max_lifetime)
            raise ValidationError({field: f"The share would last longer than the maximum lifetime ({limit})."})
        return now + lifetime if field == "expires_in" else expires_at


def format_duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"
