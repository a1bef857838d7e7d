"""Counting a share's downloads: the path every public download takes.

A mixin of Share (sharing.models.shares), kept apart because it is the
hottest code of the product and has its own rules: the deciding time is read
once the lock is held, and a counted download is recorded in the same
transaction. Two ways to count:
- a link with a download limit (or a first-download notice still owed) is
  counted exactly in its own row: one conditional UPDATE decides, so of many
  racing downloads exactly the allowed number win;
- a link without a limit only has to be live: its download inserts a pending
  Download row and never updates the share, so downloads of a hot link run
  side by side (sharing.models.tally folds the rows into download_count).
The statements are written out rather than built by the ORM: building them
cost more CPU than running them, on the path every public download takes.
"""

from functools import partial

from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from sharing.models.clock import locked_now
from sharing.models.downloads import MAX_FREE_RESUMES, RESUME_GRACE, Download, resume_slack
from sharing.models.events import Visitor, record_download
from sharing.signals import share_downloaded

# _count_unlimited's answer when the share turns out to need the exact path.
_NOT_UNLIMITED = object()
# SQL: the row may be counted as a pending download (no limit to keep exact,
# no first-download notice whose claim reads download_count).
_QUICK_COUNTABLE = "max_downloads IS NULL AND NOT (notify_first_download AND first_download_notified_at IS NULL)"


def reap_later(file_id: int | None) -> None:
    """Reap the share's file after the commit if it is ephemeral and this was its last live share."""
    from sharing.models.ephemeral import reap_later as reap  # ephemeral imports the share models

    reap(file_id)


class DownloadCounting:
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
            ended = self.Status.EXPIRED
            with connection.cursor() as cursor:
                cursor.execute(
                    _count_download_sql(connection, type(self)._meta.db_table),
                    [ended, self.EndReason.DOWNLOAD_LIMIT, stamp, self.pk, self.Status.ACTIVE, stamp],
                )
                row = cursor.fetchone()
                if row is not None:
                    used_up = row[0] == ended  # RETURNING: this UPDATE used the last allowance
                    record_download(cursor, connection, self.pk, now, visitor=visitor, size=size, used_up=used_up)
            if row is not None:
                if used_up:
                    # The response reads from a handle opened before this count
                    # (links.downloads, which never offloads an ephemeral
                    # file), so deleting the bytes does not cut it.
                    reap_later(self.file_id)
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
            download = connection.ops.quote_name(Download._meta.db_table)
            cursor.execute(
                f"INSERT INTO {download} (share_id, started_at, resume_from, reserved_until, free_resumes, pending) "
                f"SELECT id, %s, %s, %s, 0, %s FROM {table} WHERE id = %s AND status = %s AND expires_at > %s "
                f"AND {_QUICK_COUNTABLE} RETURNING id",
                [stamp, first_byte, end, True, self.pk, self.Status.ACTIVE, stamp],
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
            live = Q(share__status=self.Status.ACTIVE) | Q(
                share__status=self.Status.EXPIRED,
                share__end_reason=self.EndReason.DOWNLOAD_LIMIT,
                started_at__gt=now - RESUME_GRACE,
            )
            changed = Download.objects.filter(
                live,
                pk=download_id,
                share_id=self.pk,
                share__expires_at__gt=now,
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


def _count_download_sql(connection, db_table: str) -> str:
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
        "WHERE id = %s AND status = %s AND expires_at > %s "
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
