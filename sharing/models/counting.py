"""Counting a share's downloads: the path every public download takes.

A mixin of Share (sharing.models.shares), kept apart because it is the
hottest code of the product and has its own rules: one conditional UPDATE
decides, the deciding time is read once the lock is held, and a counted
download is recorded in the same transaction.
"""

from functools import partial

from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from sharing.models.clock import locked_now
from sharing.models.downloads import MAX_FREE_RESUMES, RESUME_GRACE, Download, resume_slack
from sharing.models.events import ShareEvent, Visitor, download_events
from sharing.signals import share_downloaded


def reap_later(file_id: int | None) -> None:
    """Reap the share's file after the commit if it is ephemeral and this was its last live share."""
    from sharing.models.ephemeral import reap_later as reap  # ephemeral imports the share models

    reap(file_id)


class DownloadCounting:
    def count_download(self, *, visitor: Visitor | None = None, size: int | None = None) -> bool:
        """Count one download if the share is servable now and has downloads left.

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
                ShareEvent.save_all(
                    download_events(self.pk, now, visitor=visitor, size=size, resumed=False, used_up=used_up)
                )
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
        with transaction.atomic():
            if not self.count_download(visitor=visitor, size=end - first_byte):
                return None
            return Download.objects.create(
                share_id=self.pk, started_at=timezone.now(), resume_from=first_byte, reserved_until=end
            )

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
                ShareEvent.save_all(
                    download_events(self.pk, now, visitor=visitor, size=end - first_byte, resumed=True, used_up=False)
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
