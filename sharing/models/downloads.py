"""Downloads: counting them, recording them, and what a resume may fetch.

The path every public download takes, with its own rules: the deciding time
is read once the lock is held, and a counted download is recorded in the
same transaction. Two ways to count:
- a link with a download limit (or a first-download notice still owed) is
  counted exactly in its own row: one conditional UPDATE decides, so of many
  racing downloads exactly the allowed number win;
- a link without a limit only has to be live: its download inserts a
  *pending* Download row and never updates the share, so downloads of a hot
  link run side by side. Folding moves pending rows into download_count: the
  daemon does it in the background, and whatever needs the stored count to be
  exact (setting a limit, reactivating, a first-download notice) folds the
  share first, under its lock. The exact count is always download_count plus
  the pending rows (Share.total_downloads; ShareQuerySet.with_pending_downloads).

Lock order is always the share first, then its download rows, so a fold
never deadlocks with downloads or with another fold. The statements are
written out rather than built by the ORM: building them cost more CPU than
running them, on the path every public download takes.

This layer sits below Share (DownloadCounting is one of its bases): it asks
sharing.models.state for the rule and reaches the share as `type(self)`.
"""

from datetime import timedelta
from functools import partial

from django.db import connections, models, transaction
from django.db.models import Count, F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from sharing.models.events import Visitor, record_download
from sharing.models.state import EndReason, Status, ended_by_limit_q, locked_now, servable_q, servable_sql
from sharing.signals import share_downloaded, share_ended

# A link that ended by its download limit lets a download it counted be
# finished for this long (never past the deadline).
RESUME_GRACE = timedelta(hours=1)
# Free resumes per counted download; each may re-send at most resume_slack().
MAX_FREE_RESUMES = 20

# _count_unlimited's answer when the share turns out to need the exact path.
_NOT_UNLIMITED = object()
# SQL: the row may be counted as a pending download (no limit to keep exact,
# no first-download notice whose claim reads download_count).
_QUICK_COUNTABLE = "max_downloads IS NULL AND NOT (notify_first_download AND first_download_notified_at IS NULL)"


def resume_slack(size: int) -> int:
    """Bytes a resume may ask again beyond what the client confirms: what a
    broken connection loses in socket buffers (a few MiB), never more than
    a quarter of the file, so resumes cannot add up to another copy."""
    return min(16 * 1024 * 1024, size // 4)


class Download(models.Model):
    """One counted download of a share, and what its resume ticket may still fetch.

    The ticket (a signed cookie, see links.tickets) names this row; the
    conditional UPDATE in Share.resume_download moves it forward.
    """

    share = models.ForeignKey("sharing.Share", on_delete=models.CASCADE, related_name="downloads")
    started_at = models.DateTimeField()
    resume_from = models.PositiveBigIntegerField(help_text="First byte of the latest request under this download.")
    reserved_until = models.PositiveBigIntegerField(
        help_text="End (exclusive) of the bytes that may have been sent under this download."
    )
    free_resumes = models.PositiveSmallIntegerField(default=0)
    # Counted by the quick path of a link without a download limit and not
    # yet added to its share's download_count (see fold_locked).
    pending = models.BooleanField(default=False, db_default=False)

    class Meta:
        indexes = [
            # The fold's scan and the exact count's subquery read only these rows.
            models.Index(fields=["share"], condition=models.Q(pending=True), name="download_pending_idx"),
        ]

    def __str__(self) -> str:
        return f"download {self.pk} of share {self.share_id}"

    def release(self, *, first_byte: int, end: int, sent_until: int) -> None:
        """The response for [first_byte, end) stopped at sent_until: give back
        what was never read from disk, unless a later resume has moved on."""
        if sent_until < end:
            Download.objects.filter(pk=self.pk, resume_from=first_byte, reserved_until=end).update(
                reserved_until=sent_until
            )


class DownloadCounting:
    """Share's download methods (a base of sharing.models.shares.Share)."""

    def count_download(self, *, visitor: Visitor | None = None, size: int | None = None) -> bool:
        """Count one download in the share's row if the share is servable now
        and has downloads left (the exact path, whatever the limit).

        Check and increment are one UPDATE, so a download racing an unshare
        either commits first (and is served) or sees the unshare (and is not),
        and of many racing for a limited link exactly the allowed number win.
        The download that uses the last allowance ends the share in that same
        UPDATE. "Now" is read once the lock is ours: a download that waited
        for the lock past the deadline is refused. Call inside atomic() to
        make more writes part of the same decision (start_download does).
        A counted download is recorded (downloaded, `size` bytes, `visitor`),
        and download_limit_reached when it ended the share.
        """
        with transaction.atomic():
            now = locked_now(type(self).objects.filter(pk=self.pk))
            connection = connections[type(self).objects.db]
            stamp = connection.ops.adapt_datetimefield_value(now)
            servable, rule_params = servable_sql(connection, now)
            with connection.cursor() as cursor:
                cursor.execute(
                    _count_download_sql(connection, type(self)._meta.db_table, servable),
                    [Status.EXPIRED, EndReason.DOWNLOAD_LIMIT, stamp, self.pk, *rule_params],
                )
                row = cursor.fetchone()
                if row is not None:
                    used_up = row[0] == Status.EXPIRED  # RETURNING: this UPDATE used the last allowance
                    record_download(cursor, connection, self.pk, now, visitor=visitor, size=size, used_up=used_up)
            if row is not None:
                if used_up:
                    # The response reads from a handle opened before this count
                    # (links.downloads, which never offloads an ephemeral
                    # file), so deleting the bytes does not cut it.
                    share_ended.send(sender=type(self), file_id=self.file_id)
                if self.notify_first_download and self.first_download_notified_at is None:
                    # The notices app claims and sends it after the commit;
                    # the claim (not this instance's view) decides.
                    transaction.on_commit(partial(share_downloaded.send, sender=type(self), share_id=self.pk))
        return row is not None

    def start_download(self, *, first_byte: int, end: int, visitor: Visitor | None = None) -> "Download | None":
        """Count a download of bytes [first_byte, end) and record it, or
        return None when the link may not serve it (ended, used up)."""
        if self.max_downloads is None and not self._owes_first_download_notice():
            counted = self._count_unlimited(first_byte=first_byte, end=end, visitor=visitor)
            if counted is not _NOT_UNLIMITED:
                return counted
        with transaction.atomic():
            if not self.count_download(visitor=visitor, size=end - first_byte):
                return None
            connection = connections[type(self).objects.db]
            with connection.cursor() as cursor:
                download_id = insert_download(cursor, connection, self.pk, first_byte, end, pending=False)
            return Download(pk=download_id, share_id=self.pk, resume_from=first_byte, reserved_until=end)

    def _owes_first_download_notice(self) -> bool:
        return self.notify_first_download and self.first_download_notified_at is None

    def _count_unlimited(self, *, first_byte: int, end: int, visitor: Visitor | None):
        """The quick path: count a download of a live link without a limit as
        a pending Download row. Return the Download, None when the link may
        not serve, or _NOT_UNLIMITED when the row (read under the lock) has a
        limit or owes a first-download notice after all (count it exactly).

        On PostgreSQL the share's row is locked FOR SHARE: downloads hold it
        together, while an unshare, an expiry or a change (FOR NO KEY UPDATE)
        waits for them and they for it; on SQLite the transaction holds the
        write lock. Either way "now" is read once the lock is held.
        """
        connection = connections[type(self).objects.db]
        table = connection.ops.quote_name(type(self)._meta.db_table)
        with transaction.atomic(), connection.cursor() as cursor:
            if connection.features.has_select_for_update:
                cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR SHARE", [self.pk])
            now = timezone.now()
            stamp = connection.ops.adapt_datetimefield_value(now)
            servable, rule_params = servable_sql(connection, now)
            download = connection.ops.quote_name(Download._meta.db_table)
            cursor.execute(
                f"INSERT INTO {download} (share_id, started_at, resume_from, reserved_until, free_resumes, pending) "
                f"SELECT id, %s, %s, %s, 0, %s FROM {table} WHERE id = %s AND {servable} "
                f"AND {_QUICK_COUNTABLE} RETURNING id",
                [stamp, first_byte, end, True, self.pk, *rule_params],
            )
            row = cursor.fetchone()
            if row is None:
                cursor.execute(f"SELECT {_QUICK_COUNTABLE} FROM {table} WHERE id = %s", [self.pk])
                unlimited = cursor.fetchone()
                return _NOT_UNLIMITED if unlimited is not None and not unlimited[0] else None
            record_download(cursor, connection, self.pk, now, visitor=visitor, size=end - first_byte, used_up=False)
        return Download(pk=row[0], share_id=self.pk, resume_from=first_byte, reserved_until=end, pending=True)

    def resume_download(self, download_id: int, *, first_byte: int, end: int, visitor: Visitor | None = None) -> bool:
        """Let the holder of `download_id`'s ticket fetch [first_byte, end)
        without counting a new download; return False when that would give
        out more than the download it resumes (then it must count anew).

        Free only while the link is live (or ended by its limit within
        RESUME_GRACE of this download's start, and before its deadline),
        only forward (first_byte beyond the last resume), only for what the
        client may have lost in flight (at most resume_slack(size) before the
        end of what was sent), and at most MAX_FREE_RESUMES times: one
        counted download never yields a second copy. An accepted resume is
        recorded (downloaded, resumed, the bytes it asks for).
        """
        size = self.file.size if self.file_id else 0
        with transaction.atomic():
            now = locked_now(type(self).objects.filter(pk=self.pk))
            finishing = ended_by_limit_q(now, "share__") & Q(started_at__gt=now - RESUME_GRACE)
            changed = Download.objects.filter(
                servable_q(now, "share__") | finishing,
                pk=download_id,
                share_id=self.pk,
                resume_from__lt=first_byte,
                reserved_until__lte=first_byte + resume_slack(size),
                free_resumes__lt=MAX_FREE_RESUMES,
            ).update(resume_from=first_byte, reserved_until=end, free_resumes=F("free_resumes") + 1)
            if changed:
                connection = connections[type(self).objects.db]
                with connection.cursor() as cursor:
                    record_download(
                        cursor, connection, self.pk, now, visitor=visitor, size=end - first_byte, resumed=True
                    )
        return bool(changed)


def _count_download_sql(connection, db_table: str, servable: str) -> str:
    """Count one download of a servable share with an allowance left, and end
    it when this download uses the last one, in one UPDATE that RETURNs the
    status. Written out rather than built by the ORM: building the Case/When
    expressions cost more CPU than the whole statement's execution, on the
    path every public download takes. SET expressions read the row as it was."""
    table = connection.ops.quote_name(db_table)
    last = "max_downloads = download_count + 1"
    return (
        f"UPDATE {table} SET download_count = download_count + 1, "
        f"status = CASE WHEN {last} THEN %s ELSE status END, "
        f"end_reason = CASE WHEN {last} THEN %s ELSE end_reason END, "
        f"ended_at = CASE WHEN {last} THEN %s ELSE ended_at END "
        f"WHERE id = %s AND {servable} "
        "AND (max_downloads IS NULL OR download_count < max_downloads) RETURNING status"
    )


def insert_download(cursor, connection, share_id: int, first_byte: int, end: int, *, pending: bool) -> int:
    """Insert a counted download's row (what its resume ticket may fetch); return its id."""
    table = connection.ops.quote_name(Download._meta.db_table)
    cursor.execute(
        f"INSERT INTO {table} (share_id, started_at, resume_from, reserved_until, free_resumes, pending) "
        "VALUES (%s, %s, %s, %s, 0, %s) RETURNING id",
        [share_id, connection.ops.adapt_datetimefield_value(timezone.now()), first_byte, end, pending],
    )
    return cursor.fetchone()[0]


# --- folding pending downloads into download_count -----------------------------


def pending_downloads():
    """An expression for annotate(): a share's pending (not yet folded) downloads."""
    counted = (
        Download.objects.filter(share_id=OuterRef("pk"), pending=True)
        .order_by()
        .values("share_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=models.BigIntegerField()), Value(0))


def fold_locked(share_ids: list[int], using: str = "default") -> None:
    """Add the pending downloads of `share_ids` to their download_count.

    The caller holds the shares' locks (locked_now) inside atomic(): no
    download of them can be counted meanwhile, so the two statements see
    the same pending rows."""
    if not share_ids:
        return
    connection = connections[using]
    share = connection.ops.quote_name(Download.share.field.related_model._meta.db_table)
    download = connection.ops.quote_name(Download._meta.db_table)
    placeholders = ", ".join(["%s"] * len(share_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {share} SET download_count = download_count + "
            f"(SELECT COUNT(*) FROM {download} d WHERE d.share_id = {share}.id AND d.pending) "
            f"WHERE id IN ({placeholders}) "
            f"AND EXISTS (SELECT 1 FROM {download} d WHERE d.share_id = {share}.id AND d.pending)",
            share_ids,
        )
        cursor.execute(
            f"UPDATE {download} SET pending = %s WHERE pending AND share_id IN ({placeholders})",
            [False, *share_ids],
        )


def any_pending(using: str = "default") -> bool:
    """Whether any download waits to be folded (a probe of download_pending_idx)."""
    connection = connections[using]
    table = connection.ops.quote_name(Download._meta.db_table)
    # The bare boolean column matches download_pending_idx's WHERE (a bound
    # parameter would not let SQLite use the partial index).
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE pending LIMIT 1")
        return cursor.fetchone() is not None
