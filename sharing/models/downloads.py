"""Counted downloads and what their resume tickets may still fetch."""

from datetime import timedelta

from django.db import models

# A link that ended by its download limit lets a download it counted be
# finished for this long (never past the deadline).
RESUME_GRACE = timedelta(hours=1)
# Free resumes per counted download; each may re-send at most resume_slack().
MAX_FREE_RESUMES = 20


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
    # yet added to its share's download_count (sharing.models.tally folds it).
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
