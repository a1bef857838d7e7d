"""An upload request: a link that lets anyone holding it upload files to
its owner, until its deadline, within its limits.

The request's row is the only truth about what it still accepts: a new
upload takes its place (a file, its bytes) with one conditional UPDATE of
the counters (take_room), so racing uploaders can never pass a limit; an
unfinished upload that goes gives its place back (collect.receivers).
Each upload made through it is recorded as a ReceivedFile, which becomes
the owner's StoredFile when the upload finishes.
"""

import secrets
from datetime import datetime
from functools import partial

from django.conf import settings
from django.contrib.auth import hashers
from django.db import models, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from collect.signals import request_created
from sharing.models import ScanState, StoredFile
from sharing.models.quotas import Reserver
from sharing.models.scans import NOT_CLEARED

TOKEN_BYTES = 16
TOKEN_PATTERN = r"[A-Za-z0-9_-]{22}"
NOTE_MAX_LENGTH = 1000
# The largest limits an owner may set (their fields are checked against them).
MAX_FILES_LIMIT = 100_000
MAX_BYTES_LIMIT = 2**62


def new_request_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


# The request's rules, each defined here once (as a Q for the database and
# as a method for a row in hand) and asked everywhere else.


def unended_q() -> Q:
    """Nobody has ended the request yet (its owner, or the daemon at its deadline)."""
    return Q(ended_at__isnull=True)


def request_open_q(now) -> Q:
    """A request accepts uploads, chunks and finishes until its deadline, or
    until its owner ends it."""
    return unended_q() & Q(expires_at__gt=now)


def places_left_q() -> Q:
    """The request is not full: a place for one more file, and a byte of
    room, within its limits. A full request takes nothing more, not even an
    empty file, so a page that says "full" and the endpoints agree."""
    files = Q(max_files__isnull=True) | Q(files_taken__lt=F("max_files"))
    size = Q(max_bytes__isnull=True) | Q(bytes_taken__lt=F("max_bytes"))
    return files & size


def room_q(length: int) -> Q:
    """One more file of `length` bytes fits in the request's limits."""
    size = Q(max_bytes__isnull=True) | Q(bytes_taken__lte=F("max_bytes") - length)
    return places_left_q() & size


class UploadRequestQuerySet(models.QuerySet):
    def due(self, now):
        """Requests past their deadline that nobody has ended yet: the
        expiry daemon ends them (collect.ending.end_if_due)."""
        return self.filter(unended_q()).exclude(request_open_q(now))


class UploadRequest(models.Model):
    class EndReason(models.TextChoices):
        EXPIRED = "expired", _("Reached its deadline")
        CLOSED = "closed", _("Closed by its owner")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="upload_requests")
    token = models.CharField(max_length=64, unique=True, editable=False, default=new_request_token)
    title = models.CharField(max_length=200, blank=True, help_text="What is asked for, shown to the uploader.")
    note = models.TextField(blank=True, help_text="An optional note to the uploader (plain text).")
    password_hash = models.CharField(max_length=256, blank=True, editable=False)
    max_files = models.PositiveIntegerField(null=True, blank=True, help_text="Files accepted in all; empty: any.")
    max_bytes = models.PositiveBigIntegerField(null=True, blank=True, help_text="Bytes accepted in all; empty: any.")
    # Places taken by uploads started (and not given back) and finished.
    files_taken = models.PositiveIntegerField(default=0, editable=False)
    bytes_taken = models.PositiveBigIntegerField(default=0, editable=False)
    notify_by_email = models.BooleanField(default=False, help_text="Email the owner when a file arrives.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(help_text="No upload starts, goes on or finishes from this moment.")
    ended_at = models.DateTimeField(null=True, blank=True, editable=False)
    end_reason = models.CharField(max_length=8, choices=EndReason.choices, blank=True, editable=False)

    objects = UploadRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # due(now) and the daemon's window: active requests by deadline.
            models.Index(fields=["expires_at"], condition=unended_q(), name="request_active_expires_idx"),
            models.Index(fields=["owner", "-created_at"], name="request_owner_created_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_files__isnull=True) | Q(files_taken__lte=F("max_files")), name="request_files_in_limit"
            ),
            models.CheckConstraint(
                condition=Q(max_bytes__isnull=True) | Q(bytes_taken__lte=F("max_bytes")), name="request_bytes_in_limit"
            ),
            models.CheckConstraint(condition=Q(max_files__gt=0) | Q(max_files__isnull=True), name="request_max_files"),
            models.CheckConstraint(condition=Q(max_bytes__gt=0) | Q(max_bytes__isnull=True), name="request_max_bytes"),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True, end_reason="") | Q(ended_at__isnull=False) & ~Q(end_reason=""),
                name="request_end_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Upload request {self.pk}"

    @classmethod
    def create_for(cls, *, owner, expires_at, password: str = "", **fields) -> "UploadRequest":
        """A new open request; the expiry daemon hears of its deadline once it commits."""
        upload_request = cls(owner=owner, expires_at=expires_at, **fields)
        upload_request.set_password(password)
        with transaction.atomic():
            upload_request.save(force_insert=True)
            transaction.on_commit(
                partial(request_created.send, sender=cls, upload_request_id=upload_request.pk, expires_at=expires_at)
            )
        return upload_request

    def is_open(self, now) -> bool:
        """request_open_q for this row (tests/test_collect_rules.py: they agree)."""
        return self.ended_at is None and self.expires_at > now

    def is_full(self) -> bool:
        """Not places_left_q for this row: no file, of any size, fits."""
        files_full = self.max_files is not None and self.files_taken >= self.max_files
        bytes_full = self.max_bytes is not None and self.bytes_taken >= self.max_bytes
        return files_full or bytes_full

    @property
    def files_left(self) -> int | None:
        """Files it still takes (None: no limit; never below 0: request_files_in_limit)."""
        return None if self.max_files is None else self.max_files - self.files_taken

    @property
    def bytes_left(self) -> int | None:
        """Bytes of room it has left (None: no limit; never below 0: request_bytes_in_limit)."""
        return None if self.max_bytes is None else self.max_bytes - self.bytes_taken

    def how_it_ended(self, now) -> tuple[str, datetime] | None:
        """(end reason, when) of a request no longer open at `now`, None while
        open. One past its deadline that the daemon has not stamped yet ended
        at its deadline: the clock decides, not the daemon."""
        if self.is_open(now):
            return None
        if self.ended_at is not None:
            return self.end_reason, self.ended_at
        return self.EndReason.EXPIRED, self.expires_at

    @property
    def has_password(self) -> bool:
        return bool(self.password_hash)

    def set_password(self, raw: str) -> None:
        self.password_hash = hashers.make_password(raw) if raw else ""

    def check_password(self, raw: str) -> bool:
        return self.has_password and hashers.check_password(raw, self.password_hash)

    @property
    def reserver(self) -> str:
        """Who the uploads through it reserve as, in the owner's quota: a
        byte limit of its own is the owner's allowance of those bytes
        (sharing.models.quotas)."""
        return Reserver.CAPPED if self.max_bytes is not None else Reserver.UNCAPPED


class ReceivedFile(models.Model):
    """One upload made through a request: arriving until its upload
    finishes, then the owner's file (`file`)."""

    request = models.ForeignKey(UploadRequest, on_delete=models.CASCADE, related_name="received")
    # The resumable upload's id (no foreign key: the upload row goes at its
    # deadline, this record stays); NULL for a file posted by the page's form.
    upload_id = models.CharField(max_length=32, unique=True, null=True, blank=True)
    name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    file = models.ForeignKey(StoredFile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [
            # collect.places.take_place counts a request's unfinished uploads.
            models.Index(fields=["request"], condition=Q(finished_at__isnull=True), name="received_arriving_idx"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def arrived(self) -> bool:
        """Its upload finished and its file's scan (if any) cleared it: only
        then does the owner see it as arrived (and hear of it)."""
        return self.state == "arrived"

    @property
    def state(self) -> str:
        """arriving (uploading), being_checked (stored, its malware scan
        owed), infected (the scan found malware: its bytes are gone), or
        arrived (its verdict clean, or too big to scan). A file the owner
        deleted since reads as arrived."""
        if self.finished_at is None:
            return "arriving"
        stored = self.file
        if stored is not None and stored.scan_state == ScanState.INFECTED:
            return "infected"
        if stored is not None and stored.scan_state in NOT_CLEARED:
            return "being_checked"
        return "arrived"


def origins(file_ids) -> dict[int, UploadRequest]:
    """The request each of these stored files arrived through (those that
    did), in one query: what the owner's file list names as their origin."""
    arrivals = ReceivedFile.objects.filter(file_id__in=list(file_ids)).select_related("request")
    return {received.file_id: received.request for received in arrivals}
