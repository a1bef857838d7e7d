"""Stored files: the uploaded bytes, their metadata, and the rules for names
and types that every path writing them applies."""

import mimetypes
import os
import re
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Q
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext as _

from sharing.models import quotas, scans
from sharing.models.scans import ScanState
from storage.stored import Digests, new_name


def too_large_message() -> str:
    return _("The file is larger than the maximum upload size of %(limit)s bytes.") % {
        "limit": settings.MAX_UPLOAD_BYTES
    }


class UploadTooLarge(ValidationError):
    """An upload over MAX_UPLOAD_BYTES: every path answers it with a 413."""


def check_upload(upload) -> None:
    """Apply the upload rules every path shares (API, web pages): the size
    limit, a file that is not empty (an empty one is nearly always a mistake:
    the wrong file picked, a script that lost its input), then a well-formed
    Content-Type if the client sent one (cleaned in place; a part without one
    gets a type guessed from its name on storing)."""
    if upload.size == 0:
        raise ValidationError(
            _("%(name)s is empty (0 bytes): there is nothing to share.") % {"name": upload.name}, code="empty"
        )
    if upload.size > settings.MAX_UPLOAD_BYTES:
        raise UploadTooLarge(too_large_message(), code="too_large")
    if (upload.content_type or "").strip():
        upload.content_type = clean_content_type(upload.content_type)


def stored_file_path(instance, filename: str) -> str:
    """The FileField's upload_to: the storage's own random name."""
    return new_name()


class Superseded(Exception):
    """The caller no longer wanted the file it was storing; nothing was stored."""


class StoredFile(models.Model):
    # No single-column index: file_owner_created_idx starts with owner.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="files", db_index=False)
    content = models.FileField(upload_to=stored_file_path, max_length=255)
    name = models.CharField(max_length=255, help_text="The name the file was uploaded with.")
    size = models.PositiveBigIntegerField(help_text="Size in bytes.")
    content_type = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    # NULL only for a file whose bytes were already missing when the column came.
    crc32 = models.PositiveBigIntegerField(
        null=True, blank=True, editable=False, help_text="CRC-32 of the bytes, as a zip archive's headers carry it."
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Upload-and-share (transfer.sh, Send): the file goes once it has been
    # shared and no share of it is live any more (sharing.models.removal).
    delete_when_unshared = models.BooleanField(
        default=False, help_text="Delete the file (bytes and row) as soon as its last share ends."
    )

    # The malware scan (scanning/; the rule is sharing.models.scans). A file
    # stored while CLAMD_URL is set starts pending; one stored without it
    # (and every file older than scanning) is unscanned and served as before.
    scan_state = models.CharField(
        max_length=16, choices=ScanState.choices, default=ScanState.UNSCANNED, db_default=ScanState.UNSCANNED
    )
    scan_signature = models.CharField(max_length=255, blank=True, default="", help_text="infected: what clamd found.")
    scanned_at = models.DateTimeField(null=True, blank=True, help_text="When the last scan's verdict was recorded.")
    # The scan worker's queue: a file is due for a scan at scan_due_at (a new
    # one at once, a failed try later, a rescan when asked; NULL: not queued),
    # and is taken by one worker at a time (its claim). A clean file queued
    # for a rescan stays clean, and served, until its new verdict.
    scan_due_at = models.DateTimeField(null=True, blank=True)
    scan_claimed_at = models.DateTimeField(null=True, blank=True)
    scan_claimed_by = models.CharField(max_length=64, blank=True, default="")
    scan_attempts = models.PositiveIntegerField(default=0, help_text="Scans started since the file last waited.")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="file_owner_created_idx"),
            # The daemon's sweep reads only the few files marked ephemeral.
            models.Index(fields=["id"], condition=Q(delete_when_unshared=True), name="file_ephemeral_idx"),
            # The scan worker's claim reads only the files waiting for a scan.
            models.Index(fields=["scan_due_at"], condition=Q(scan_due_at__isnull=False), name="file_scan_due_idx"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        # Every path that writes a name (upload, admin, shell) cleans it: a
        # newline in it would make every download's header invalid.
        self.name = clean_file_name(self.name)
        super().save(*args, **kwargs)

    @property
    def scan_allows(self) -> bool:
        """Whether the file's scan lets it be served (sharing.models.scans)."""
        return scans.scan_allows(self.scan_state)

    def known_crc32(self) -> int:
        """The bytes' CRC-32, computed (one read) and stored the first time
        it is asked of a file that has none (its bytes were missing when the
        column came); OSError when they still are."""
        if self.crc32 is None:
            digests = Digests()
            with self.content.storage.open(self.content.name, "rb") as handle:
                for chunk in iter(lambda: handle.read(1024 * 1024), b""):
                    digests.update(chunk)
            StoredFile.objects.filter(pk=self.pk, crc32__isnull=True).update(crc32=digests.crc32)
            self.crc32 = digests.crc32
        return self.crc32

    @classmethod
    def create_from_upload(
        cls,
        *,
        owner,
        upload,
        delete_when_unshared: bool = False,
        reserved: int = 0,
        reserved_by: str = quotas.Reserver.OWNER,
        still_wanted: Callable[["StoredFile"], bool] | None = None,
    ) -> "StoredFile":
        """Store the uploaded bytes and their metadata, or neither. The bytes
        count against the owner's quota (QuotaExceeded when they do not fit),
        `reserved` of them already set aside for this upload (`reserved_by`
        whom: quotas.Reserver). `still_wanted`,
        called in the transaction that stores the row, may decline the file
        (a resumable upload that another request finished first): then
        nothing is stored and Superseded is raised."""
        # Bytes an upload path already streamed into the storage come with
        # their digests (storage.upload_handlers.StoredUpload): adopted, not
        # read again nor copied.
        already_stored = getattr(upload, "stored_name", None)
        digests = getattr(upload, "digests", None) if already_stored else None
        if digests is None:
            digests = Digests()
            for chunk in upload.chunks():
                digests.update(chunk)
        if not reserved:
            # Before the bytes are written; charge() below is what decides.
            quotas.check_room(owner.pk, digests.size)
        name = clean_file_name(upload.name)
        content_type = clean_content_type(upload.content_type or mimetypes.guess_type(name)[0] or "")
        stored = cls(
            owner=owner,
            name=name,
            size=digests.size,
            content_type=content_type,
            sha256=digests.sha256,
            crc32=digests.crc32,
            delete_when_unshared=delete_when_unshared,
        )
        if settings.CLAMD_URL:
            stored.scan_state, stored.scan_due_at = ScanState.PENDING, timezone.now()
        if already_stored:
            stored.content.name = already_stored
        else:
            stored.content.save(name, upload, save=False)
        try:
            with transaction.atomic():
                stored.save()
                # Asked before charging: a declined file must not spend the
                # reservation the file that was kept already turned into itself.
                if still_wanted is not None and not still_wanted(stored):
                    raise Superseded
                quotas.charge(owner.pk, digests.size, from_reserved=reserved, reserved_by=reserved_by)
        except BaseException:
            # The row never existed, so the bytes must not outlive it.
            stored.content.storage.delete(stored.content.name)
            raise
        if already_stored:
            upload.adopted = True
        return stored


@receiver(post_delete, sender=StoredFile, dispatch_uid="sharing.refund_deleted_file")
def refund_deleted_file(sender, instance: StoredFile, **kwargs) -> None:
    """Give the owner back a deleted file's bytes, in the deletion's own
    transaction: the space is free when the row is gone (the bytes
    themselves follow: sharing.models.leftovers)."""
    quotas.refund(instance.owner_id, instance.size)


# RFC 9110 media type: type "/" subtype *( ";" parameter ), tokens of the
# characters below, parameter values a token or a quoted string.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
MEDIA_TYPE = re.compile(
    rf"(?P<essence>{_TOKEN}/{_TOKEN})(?P<parameters>(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|\"[^\"\\\x00-\x1f\x7f]*\"))*)"
)
CONTENT_TYPE_MAX = 255  # the column


def clean_content_type(raw: str) -> str:
    """Return `raw` as a stored type (type/subtype lowercased, parameters
    kept), application/octet-stream when there is none; raise
    ValidationError when it is not a well-formed media type within the column."""
    text = (raw or "").strip()
    if not text:
        return "application/octet-stream"
    match = MEDIA_TYPE.fullmatch(text)
    if match is None or len(text) > CONTENT_TYPE_MAX:
        raise ValidationError(
            _("The file's Content-Type %(type)s is not a valid media type (type/subtype, at most %(max)s characters).")
            % {"type": repr(text[:60]), "max": CONTENT_TYPE_MAX}
        )
    return match["essence"].lower() + match["parameters"]


def clean_file_name(raw: str | None) -> str:
    name = os.path.basename((raw or "").replace("\\", "/")).strip()
    name = "".join(ch for ch in name if ch.isprintable())
    if not name:
        return "file"
    if len(name) > 255:
        stem, ext = os.path.splitext(name)
        name = stem[: 255 - len(ext[:20])] + ext[:20]
    return name
