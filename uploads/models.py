"""A resumable upload: its row says how far it got, its partial file holds
the bytes received so far.

The row is the only truth about the upload's state. Who may write next is
decided by a conditional UPDATE on it (uploads.writing), never by a lock
in a process: the servers of several nodes share nothing but the database.
"""

import os
import secrets
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import models, transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce, Least
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from sharing.models import StoredFile, quotas
from sharing.models.state import locked_now
from storage import store
from uploads.signals import upload_removed, upload_removing

# 16 random bytes: 128 bits, as 22 URL-safe characters. The id is the
# upload's public name; guessing another's is hopeless, and it would answer
# 404 to anyone but its owner anyway.
ID_BYTES = 16
ID_LENGTH = 22
ID_PATTERN = r"[A-Za-z0-9_-]{22}"
# Bytes of the writer's claim token (uploads.writing.WriteClaim).
WRITER_LENGTH = 22


def new_upload_id() -> str:
    return secrets.token_urlsafe(ID_BYTES)


def expires_after() -> timedelta:
    return timedelta(seconds=settings.UPLOAD_EXPIRES_AFTER)


def renewed_deadline(now):
    """The deadline progress at `now` renews an upload to, as an expression
    for its UPDATE: UPLOAD_EXPIRES_AFTER from now, never past its hard end
    (ends_by, set for the uploads of a link that collects files)."""
    renewed = Value(now + expires_after(), output_field=DateTimeField())
    return Least(renewed, Coalesce(F("ends_by"), renewed))


# Where the bytes of unfinished uploads live, in the store's names.
PARTIAL_FOLDER = "uploads/partial"


def partial_dir() -> Path:
    """Where the bytes of unfinished uploads live: inside MEDIA_ROOT (same
    file system as the stored files), which nothing serves."""
    return Path(settings.MEDIA_ROOT) / PARTIAL_FOLDER


def partial_path(upload_id: str) -> Path:
    return partial_dir() / upload_id


def store_link(upload_id: str) -> Path:
    """The second name a finisher gives the partial file for the storage to
    take (uploads.finishing): left behind if the finisher dies holding it."""
    return partial_dir() / f"{upload_id}.store"


def partial_object(upload_id: str):
    """In a bucket, where the upload's bytes gather instead of a partial
    file (storage.bucket_partials); None on the local disk."""
    return store.partial_object(f"{PARTIAL_FOLDER}/{upload_id}")


def create_partial_file(upload_id: str) -> None:
    """An empty partial file, readable by the service's user only, in a
    folder made like the stored files' folders (or, in a bucket, an
    unfinished multipart upload)."""
    in_bucket = partial_object(upload_id)
    if in_bucket is not None:
        in_bucket.create()
        return
    folder = partial_dir()
    mode = settings.FILE_UPLOAD_DIRECTORY_PERMISSIONS or 0o700
    for path in reversed([folder, folder.parent]):
        if not path.is_dir():
            os.makedirs(path, exist_ok=True)
            os.chmod(path, mode)  # makedirs' mode is filtered by the umask
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    fd = os.open(partial_path(upload_id), flags, settings.FILE_UPLOAD_PERMISSIONS or 0o600)
    os.close(fd)


def discard_partial_file(upload_id: str) -> None:
    """Leave none of the upload's partial bytes: the partial file and a dead
    finisher's second name for it (or, in a bucket, its parts and tails)."""
    in_bucket = partial_object(upload_id)
    if in_bucket is not None:
        in_bucket.discard()
        return
    partial_path(upload_id).unlink(missing_ok=True)
    store_link(upload_id).unlink(missing_ok=True)


# An upload's two rules, each defined here once (as a Q for the database,
# and as a method of Upload for a row in hand) and asked everywhere else.


def upload_open_q(now) -> Q:
    """An upload takes chunks (and answers HEAD) until its deadline."""
    return Q(expires_at__gt=now)


def unclaimed_q(now) -> Q:
    """No request holds a live claim to write to it (uploads.writing)."""
    return Q(writer__isnull=True) | Q(writing_until__lt=now)


class UploadQuerySet(models.QuerySet):
    def due(self, now):
        """Uploads whose deadline has passed (finished or not) and that no
        request is writing to: the expiry daemon removes them with
        remove_upload. Once the deadline has passed no request can claim an
        upload any more (uploads.writing), so the set only grows."""
        return self.filter(unclaimed_q(now)).exclude(upload_open_q(now))


class Upload(models.Model):
    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=new_upload_id, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tus_uploads")
    length = models.PositiveBigIntegerField(help_text="Upload-Length: the whole file's size in bytes.")
    offset = models.PositiveBigIntegerField(default=0, help_text="Bytes received and kept so far.")
    metadata = models.JSONField(default=dict, blank=True, help_text="Upload-Metadata as sent: key -> base64 value.")
    filename = models.CharField(max_length=255, help_text="The stored file's name (cleaned).")
    content_type = models.CharField(max_length=255, blank=True, help_text="Empty: guessed from the name.")
    delete_when_unshared = models.BooleanField(default=False)
    # Who set its length aside in the owner's quota (its owner, or a stranger
    # through an upload request): removing or finishing it gives that back.
    reserved_by = models.CharField(
        max_length=8, choices=quotas.Reserver.choices, default=quotas.Reserver.OWNER, editable=False
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Renewed by every request that adds bytes, and once more at the finish:
    # a client that lost the last answer can still learn the file until then.
    expires_at = models.DateTimeField()
    # A deadline no renewal passes (NULL: none). The uploads of an upload
    # request end with it: no chunk is taken, nor an upload finished, after.
    ends_by = models.DateTimeField(null=True, blank=True, editable=False)
    # The request allowed to write now, and until when its claim holds
    # (renewed while it writes); both NULL when nobody writes (NULL rather
    # than "": the CHECK pairs the two, and "nobody" is no token).
    writer = models.CharField(max_length=WRITER_LENGTH, null=True, blank=True, editable=False)  # noqa: DJ001
    writing_until = models.DateTimeField(null=True, blank=True, editable=False)
    file = models.ForeignKey(
        StoredFile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", help_text="The finished file."
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = UploadQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # due(now): the daemon's one range scan.
            models.Index(fields=["expires_at"], name="upload_expires_idx"),
            models.Index(fields=["owner", "-created_at"], name="upload_owner_created_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(length__gt=0), name="upload_length_positive"),
            models.CheckConstraint(condition=Q(offset__gte=0, offset__lte=F("length")), name="upload_offset_in_file"),
            models.CheckConstraint(
                condition=Q(writer__isnull=True, writing_until__isnull=True)
                | Q(writer__isnull=False, writing_until__isnull=False),
                name="upload_writer_has_deadline",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True) | Q(offset=F("length"), writer__isnull=True),
                name="upload_finished_is_complete",
            ),
            models.CheckConstraint(
                condition=Q(ends_by__isnull=True) | Q(expires_at__lte=F("ends_by")), name="upload_ends_by_its_end"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.filename} ({self.offset}/{self.length})"

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def is_open(self, now) -> bool:
        """upload_open_q for this row (tests/test_uploads_rules.py: they agree)."""
        return self.expires_at > now


def remove_upload(upload: Upload) -> None:
    """Delete the upload's row and its partial bytes (the stored file of a
    finished one stays): termination. Safe to call twice or from two
    processes at once: deleting a row that is gone deletes nothing, and so
    does unlinking a file that is gone. A request still writing to it finds
    its claim gone and stops (uploads.writing)."""
    with transaction.atomic():
        upload_removing.send(sender=Upload, upload_id=upload.pk)
        locked_now(Upload.objects.filter(pk=upload.pk))
        _delete_locked(upload.pk)


def remove_if_due(upload_id: str) -> bool:
    """The expiry daemon's removal: the upload goes only if it is due (the
    one rule, UploadQuerySet.due) at the time read once its row is locked,
    so one renewed by a chunk meanwhile stays. Return whether it went."""
    with transaction.atomic():
        upload_removing.send(sender=Upload, upload_id=upload_id)
        now = locked_now(Upload.objects.filter(pk=upload_id))
        if not Upload.objects.filter(pk=upload_id).due(now).exists():
            return False
        return _delete_locked(upload_id)


def _delete_locked(upload_id: str) -> bool:
    """Delete a locked upload row, give its owner back the space an
    unfinished one set aside (once: only the remover that found the row
    does; a finished one's space became its file's), and its bytes after
    the commit."""
    row = Upload.objects.filter(pk=upload_id).values_list("owner_id", "length", "finished_at", "reserved_by").first()
    if row is None:
        return False
    Upload.objects.filter(pk=upload_id).delete()
    owner_id, length, finished_at, reserved_by = row
    if finished_at is None:
        quotas.release(owner_id, length, by=reserved_by)
    upload_removed.send(sender=Upload, upload_id=upload_id, length=length, finished=finished_at is not None)
    transaction.on_commit(partial(discard_partial_file, upload_id))
    return True


def deadlines_before(until) -> list[tuple[str, float]]:
    """(id, deadline as a timestamp) of the uploads due before `until`, for
    the expiry daemon's heap: the due() rule decides again when each falls due."""
    rows = Upload.objects.filter(expires_at__lt=until).order_by("expires_at").values_list("pk", "expires_at")
    return [(pk, expires_at.timestamp()) for pk, expires_at in rows]


@receiver(post_delete, sender=Upload, dispatch_uid="uploads.discard_partial_bytes")
def discard_partial_bytes(sender, instance: Upload, **kwargs) -> None:
    """Rows deleted by a cascade (their owner deleted) take their bytes too,
    once the deletion has committed."""
    transaction.on_commit(partial(discard_partial_file, instance.pk), using=kwargs.get("using"))
