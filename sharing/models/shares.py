"""Shares: links to one file or several that end by time, by their download
limit, or when unshared.

Every state change of a share is one conditional UPDATE whose row count says
whether it happened, so two requests (or a request and the expiry daemon)
racing for the same share can never both win. Writes happen inside
transaction.atomic(); on SQLite that begins with BEGIN IMMEDIATE (see
settings), so `now` is read while holding the write lock and `updated_at`
grows in commit order, which the expiry daemon's pick-up relies on.
"""

import secrets
from datetime import datetime, timedelta
from functools import cached_property, partial

from django.conf import settings
from django.contrib.auth import hashers
from django.core.exceptions import ValidationError
from django.db import models, router, transaction
from django.db.models import F, Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual
from django.utils import timezone

from sharing import rows
from sharing.models import budget, state
from sharing.models.downloads import DownloadCounter, Reservation, Sending, fold_locked
from sharing.models.events import ShareEvent, Visitor, change_events
from sharing.models.files import StoredFile
from sharing.models.items import ShareFiles, ShareItem, check_files, file_ids_of
from sharing.models.querysets import ShareQuerySet
from sharing.models.state import Fate, fate_of, locked_now, sendable_q
from sharing.signals import share_ended, share_schedule_changed

# "Leave as it is" for optional arguments where None means something (no limit).
KEEP = object()
# What Share.change may change, and the counts and size that decide whether a new limit ends the share.
_CHANGEABLE = (
    "expires_at",
    "max_downloads",
    "password_hash",
    "message",
    "download_count",
    "bytes_left",
    "bytes_reserved",
    "size",
    "least",
)

# Far above any real use, and within the column on every database.
MAX_DOWNLOADS_LIMIT = 1_000_000_000
# A note, not a letter: long enough for a few sentences, short enough for the page's card.
MESSAGE_MAX_LENGTH = 1000

SHARE_TOKEN_BYTES = 32  # 256 random bits: far beyond guessing (128 would do).


def new_share_token() -> str:
    return secrets.token_urlsafe(SHARE_TOKEN_BYTES)


class Share(models.Model):
    Status = state.Status
    EndReason = state.EndReason

    # Its files are ShareItem rows (sharing.models.items); deleting a file
    # takes it out, and a share whose last file went stays (ended) for history.
    # One copy of a share is each of its files once, however it is sent
    # (file by file, or as a zip whose headers cost nothing): the byte
    # budget counts copies of this many bytes.
    size = models.PositiveBigIntegerField(
        default=0, db_default=0, editable=False, help_text="Bytes of one copy: its files' sizes added up."
    )
    least = models.PositiveBigIntegerField(
        default=0,
        db_default=0,
        editable=False,
        help_text="Bytes of its smallest file: a limited link whose budget holds less is used up.",
    )
    # No single-column index: share_owner_created_idx starts with owner.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="shares", db_index=False)
    token = models.CharField(max_length=64, unique=True, editable=False, default=new_share_token)
    created_at = models.DateTimeField(default=timezone.now)
    # Bumped by an owner's or admin's writes (create, renew, unshare), not by
    # an end by time or limit; runexpiry's pick-up reads rows changed since.
    updated_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When the share stopped being active.")
    end_reason = models.CharField(max_length=16, choices=EndReason.choices, blank=True, default="")
    download_count = models.PositiveBigIntegerField(default=0)
    max_downloads = models.PositiveIntegerField(
        null=True, blank=True, help_text="Downloads allowed in all; empty means unlimited."
    )
    # The byte budget (sharing.models.budget): what the link may still send.
    bytes_left = models.PositiveBigIntegerField(
        null=True, blank=True, editable=False, help_text="Bytes the download limit still allows; empty when unlimited."
    )
    bytes_reserved = models.PositiveBigIntegerField(
        default=0,
        db_default=0,
        editable=False,
        help_text="Bytes reserved by responses of a limited link still sending (0: none is).",
    )
    # A Django password hash (never the password); "" when the link has none.
    password_hash = models.CharField(max_length=255, blank=True, default="", editable=False)
    # Shown as plain text (escaped) on the link's page once it is unlocked.
    message = models.TextField(
        max_length=MESSAGE_MAX_LENGTH,
        blank=True,
        default="",
        db_default="",
        help_text="A note from the owner, shown to the recipient on the link's page (plain text).",
    )
    # Email notices to the owner (the notices app sends them; each is claimed
    # once with a conditional UPDATE of its *_at column, see notices.claims).
    # db_default too: rows inserted outside Django (bench/db.py) get the same.
    notify_first_download = models.BooleanField(
        default=False, db_default=False, help_text="Email the owner when the link is first downloaded."
    )
    remind_before_expiry = models.BooleanField(
        default=True, db_default=True, help_text="Email the owner the policy's reminder lead before the link expires."
    )
    first_download_notified_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Per deadline: a renewal clears it.
    reminder_sent_at = models.DateTimeField(null=True, blank=True, editable=False)

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
            # runexpiry's pick-up query: active shares written since its last
            # look. Over every row: an expiry, leaving updated_at alone, never
            # touches it (a partial index lost a row at each expiry, ~7 us).
            models.Index(fields=["updated_at"], name="share_updated_idx"),
            models.Index(fields=["owner", "-created_at"], name="share_owner_created_idx"),
            # The daemon's retention purge: ended shares, oldest end first.
            models.Index(fields=["ended_at", "id"], condition=Q(ended_at__isnull=False), name="share_ended_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(status="active", ended_at__isnull=True, end_reason="")
                    | Q(status="expired", ended_at__isnull=False, end_reason__in=["expired", "download_limit"])
                    | Q(
                        status="unshared",
                        ended_at__isnull=False,
                        end_reason__in=["unshared", "file_deleted", "infected"],
                    )
                ),
                name="share_status_matches_end",
            ),
            models.CheckConstraint(condition=Q(expires_at__gt=F("created_at")), name="share_expires_after_creation"),
            # Counted in characters on both databases (a TextField's max_length binds only forms).
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("message"), MESSAGE_MAX_LENGTH), name="share_message_length"
            ),
            # A limited link has a byte budget, an unlimited one none (the
            # budget never goes below 0: a positive column).
            models.CheckConstraint(
                condition=Q(max_downloads__isnull=True, bytes_left__isnull=True)
                # isnull=False: a CHECK passes when it is NULL (NULL >= 1).
                | Q(max_downloads__isnull=False, max_downloads__gte=1, bytes_left__isnull=False),
                name="share_budget_with_limit",
            ),
        ]

    def __str__(self) -> str:
        return f"share {self.pk} of {self.title}"

    # --- its files: sharing.models.items.ShareFiles ----------------------------

    @cached_property
    def _files(self) -> ShareFiles:
        prefetched = "items" in getattr(self, "_prefetched_objects_cache", {})
        return ShareFiles(self.items, saved=bool(self.pk), prefetched=prefetched)

    @property
    def files(self) -> list[StoredFile]:
        return self._files.all()

    @property
    def file_ids(self) -> list[int]:
        return self._files.ids()

    @property
    def file(self) -> StoredFile | None:
        return self._files.first()

    @property
    def title(self) -> str:
        return self._files.title()

    def file_at(self, position: int) -> StoredFile | None:
        return self._files.at(position)

    def attach_files(self, files: list[StoredFile]) -> None:
        self._files.attach(files)

    # --- reading ----------------------------------------------------------

    def is_servable(self, now: datetime | None = None) -> bool:
        return state.is_servable(self.status, self.expires_at, now or timezone.now())

    def fate(self, now: datetime | None = None) -> Fate:
        """What has happened to this share at `now` (live, expired, ...) and
        since when: every page, answer and API field that says so asks this."""
        return fate_of(
            status=self.status,
            end_reason=self.end_reason,
            ended_at=self.ended_at,
            expires_at=self.expires_at,
            has_file=bool(self.file_ids),
            now=now or timezone.now(),
            used_up=bool(self.file_ids) and budget.used_up(self.bytes_left, self.least),
        )

    def effective_status(self, now: datetime | None = None) -> str:
        """The status a client of the API reads (active, expired, unshared)."""
        return self.fate(now).status

    @property
    def lateness(self) -> timedelta | None:
        """How long after its deadline the expiry daemon committed the expiry
        (None unless the share ended by time)."""
        if self.end_reason != self.EndReason.EXPIRED or self.ended_at is None:
            return None
        return self.ended_at - self.expires_at

    @property
    def total_downloads(self) -> int:
        """Every download counted so far: download_count plus the pending
        downloads of a link without a limit (sharing.models.downloads)."""
        pending = getattr(self, "pending_downloads", None)
        if pending is None:
            pending = self.downloads.filter(pending=True).count() if self.pk else 0
        return self.download_count + pending

    @property
    def downloads_left(self) -> int | None:
        """The whole copies the byte budget still holds (None: unlimited)."""
        if self.bytes_left is None:
            return None  # without reading the file's row
        return budget.whole_copies(self.bytes_left, self.size)

    @property
    def budget(self) -> int | None:
        """The link's whole byte budget (None: unlimited)."""
        return budget.byte_budget(self.max_downloads, self.size)

    @property
    def has_password(self) -> bool:
        return bool(self.password_hash)

    def check_password(self, raw: str) -> bool:
        try:
            raw.encode()
        except UnicodeEncodeError:  # a lone surrogate: no password can be it
            return False
        return self.has_password and hashers.check_password(raw, self.password_hash)

    # --- writing: each one conditional UPDATE -------------------------------

    def reserve_bytes(
        self, *, first: int, end: int, visitor: Visitor | None = None, sending: Sending | None = None
    ) -> Reservation | None:
        """Allow a response to send bytes [first, end), or None (see DownloadCounter.reserve)."""
        return DownloadCounter(self).reserve(first=first, end=end, visitor=visitor, sending=sending)

    def count_download(self, *, visitor: Visitor | None = None) -> bool:
        """Send one whole copy of a one-file share at once (see DownloadCounter.count_copy)."""
        return DownloadCounter(self).count_copy(visitor=visitor)

    def record_wrong_password(self, visitor: Visitor | None = None) -> None:
        """Record a wrong password given for this link (no state changes)."""
        ShareEvent.record(self.pk, ShareEvent.Kind.WRONG_PASSWORD, timezone.now(), visitor=visitor)

    @classmethod
    def create_for(
        cls,
        *,
        files: list[StoredFile] | None = None,
        file: StoredFile | None = None,
        expires_at: datetime,
        max_downloads: int | None = None,
        password: str = "",
        notify_first_download: bool = False,
        remind_before_expiry: bool = True,
        message: str = "",
    ) -> "Share":
        """Share `files` (one or more of one owner's files, in the order given;
        or the one `file`) until `expires_at`; raise ValidationError for an
        empty, repeated or mixed list, or a deadline that passed while
        waiting for the lock."""
        if (files is None) == (file is None):
            raise TypeError("give files or file")
        files = check_files([file] if file is not None else files)
        # Hashing takes ~0.3 s by design: never while holding the write lock.
        password_hash = hashers.make_password(password) if password else ""
        # Made (and its token drawn) before the write lock is taken: on
        # SQLite every create waits for the one before it to commit.
        share = cls(
            owner_id=files[0].owner_id,  # not .owner: a query for a row only its id is needed of
            size=sum(stored.size for stored in files),
            least=min(stored.size for stored in files),
            expires_at=expires_at,
            max_downloads=max_downloads,
            password_hash=password_hash,
            notify_first_download=notify_first_download,
            remind_before_expiry=remind_before_expiry,
            message=message,
        )
        share.start_budget()
        with transaction.atomic():
            now = timezone.now()
            if expires_at <= now:
                # Only when waiting for the write lock outlasted a very short
                # lifetime; the CHECK constraint would refuse the row anyway.
                raise ValidationError({"expires_at": "The deadline passed before the share could be created."})
            share.created_at = share.updated_at = now
            using = router.db_for_write(cls)
            rows.insert_skipping_save(share, using=using)
            ShareItem.objects.using(using).bulk_create(
                ShareItem(share_id=share.pk, file_id=stored.pk, position=position)
                for position, stored in enumerate(files, start=1)
            )
            ShareEvent.record(
                share.pk,
                ShareEvent.Kind.CREATED,
                now,
                expires_at=expires_at,
                details={"max_downloads": max_downloads, "password": bool(password), "message": bool(message)},
            )
            transaction.on_commit(partial(announce_schedule, share.pk, expires_at))
        share.pending_downloads = 0  # a new share has none: total_downloads needs no query
        for position, stored in enumerate(files, start=1):
            stored.position_in_share = position
        share.attach_files(files)
        return share

    def start_budget(self) -> None:
        """Give a new share its whole byte budget (none when unlimited)."""
        if self.max_downloads is not None and self.bytes_left is None:
            self.bytes_left = budget.byte_budget(self.max_downloads, self.size)

    def refresh_from_db(self, *args, **kwargs):
        super().refresh_from_db(*args, **kwargs)
        # Annotated when the share was read; a fold since (a new limit, a
        # reactivation) moved those downloads into download_count; a file
        # may have left since.
        self.__dict__.pop("pending_downloads", None)
        self.__dict__.pop("_files", None)

    def set_expiry(self, expires_at: datetime) -> bool:
        """Renew or shorten an active share that has not expired yet (see change)."""
        return self.change(expires_at=expires_at)

    def change(
        self,
        *,
        expires_at: datetime | None = None,
        max_downloads=KEEP,
        password=KEEP,
        notify_first_download=KEEP,
        remind_before_expiry=KEEP,
        message=KEEP,
    ) -> bool:
        """Change a live share's deadline, download limit, password or message, or none.

        Return False (and change nothing) when the share is no longer active,
        including when its deadline has passed before this commit (a change
        never resurrects an expired link), or when the new deadline itself has
        already passed by the time the lock was ours. A new download limit
        gets a byte budget less what the link already used (see
        sharing.models.budget): one it already exceeds raises
        ValidationError, one that leaves no whole copy ends the share
        (download_limit) in the same UPDATE. An empty
        password removes it. A new deadline gets an expiry reminder of its
        own (none if it is less than the reminder lead ahead, see
        notices.claims).
        """
        values = {}
        if password is not KEEP:
            values["password_hash"] = hashers.make_password(password) if password else ""
        if message is not KEEP:
            values["message"] = message
        for name, value in (
            ("notify_first_download", notify_first_download),
            ("remind_before_expiry", remind_before_expiry),
        ):
            if value is not KEEP:
                values[name] = bool(value)
        with transaction.atomic():
            now = locked_now(Share.objects.filter(pk=self.pk))
            if max_downloads is not KEEP:
                fold_locked([self.pk])  # a new limit is judged against every download so far
            if expires_at is not None:
                if expires_at <= now:
                    return False
                values["expires_at"] = expires_at
                values["reminder_sent_at"] = None  # reminders are per deadline
            # Read under the lock: what the UPDATE below changes it from.
            before = Share.objects.filter(pk=self.pk).values(*_CHANGEABLE).first()
            ends = False
            if max_downloads is not KEEP and before is not None:
                values["max_downloads"] = max_downloads
                values["bytes_left"] = left = budget.left_after_new_limit(max_downloads, before)
                # Ends in this UPDATE only when no response is sending: the last to settle ends it otherwise.
                ends = budget.used_up(left, before["least"]) and before["bytes_reserved"] == 0
                if ends:
                    values.update(status=self.Status.EXPIRED, end_reason=self.EndReason.DOWNLOAD_LIMIT, ended_at=now)
            changed = Share.objects.servable(now).filter(pk=self.pk).update(updated_at=now, **values)
            if changed:
                ShareEvent.save_all(change_events(self.pk, now, before, values, ended=ends))
                if ends:
                    share_ended.send(sender=Share, file_ids=file_ids_of(self.pk))  # the new limit ended it
            if changed and expires_at is not None:
                transaction.on_commit(partial(announce_schedule, self.pk, expires_at))
        self.refresh_from_db()
        return bool(changed)

    def unshare(self, reason: str = EndReason.UNSHARED) -> bool:
        """End a share now, so none of its bytes is sent any more: an active
        one, or one that ended by its download limit and could still finish
        a download within its budget. Return False if there was nothing to end."""
        with transaction.atomic():
            now = locked_now(Share.objects.filter(pk=self.pk))
            changed = Share.objects.filter(sendable_q(now), pk=self.pk).update(
                status=self.Status.UNSHARED, end_reason=reason, ended_at=now, updated_at=now
            )
            if changed:  # the end reasons unshared and file_deleted are also event kinds
                ShareEvent.record(self.pk, ShareEvent.Kind(reason), now)
                share_ended.send(sender=Share, file_ids=file_ids_of(self.pk))
        self.refresh_from_db()
        return bool(changed)


def announce_schedule(share_id: int, expires_at: datetime) -> None:
    """Tell the expiry daemons a share's deadline (call after the commit that set it)."""
    share_schedule_changed.send(sender=Share, share_id=share_id, expires_at=expires_at)
