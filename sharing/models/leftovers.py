"""What a deleted file leaves behind: its bytes, until the storage has
deleted them.

A file's row and its bytes cannot go in one transaction: the bytes are on a
disk or in a bucket. So the transaction that deletes the row also records
the bytes' name (BytesToDelete), and the bytes are deleted once it has
committed. A rollback leaves the row, its bytes and no record; a commit
leaves the record until the bytes are gone, even if the process dies right
after it. A deletion that fails (a bucket briefly unreachable, a disk
error) keeps its record, with the error, and the expiry daemon's
housekeeping tries it again (retry_deletions), waiting longer after each
failure (backoff).

Several processes may try the same record (the request that deleted the
file, several daemons): each try first claims it with a conditional UPDATE
of its attempts, and a record is deleted only by the try whose bytes
deletion succeeded, and only while no later try has claimed it. Deleting
bytes twice is harmless (a name already gone counts as deleted:
FileSystemStorage ignores it, an S3 DELETE succeeds); losing the record of
bytes still stored is not.
"""

import logging
from datetime import timedelta
from functools import partial

from django.core.files.storage import Storage
from django.db import connections, models, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from sharing.models.files import StoredFile

logger = logging.getLogger("sharing")

# A storage down for a day is still tried every hour, and one back for a
# minute is tried again within a few seconds of the first failure.
MAX_BACKOFF = 3600
ERROR_MAX_LENGTH = 1000


def backoff(attempts: int) -> timedelta:
    """How long after its `attempts`-th try a deletion is tried again:
    2 s after the first, then 4, 8, 16 ... seconds, at most an hour."""
    return timedelta(seconds=min(2 ** min(attempts, 16), MAX_BACKOFF))


def bytes_storage() -> Storage:
    """Where stored files' bytes live (the record keeps only their name)."""
    return StoredFile._meta.get_field("content").storage


class BytesToDelete(models.Model):
    # Not unique: names are random (stored_file_path), and a constraint would
    # be one more way for the file's deletion itself to fail.
    name = models.CharField(max_length=255, help_text="The bytes' name in the storage (as the file's content had it).")
    since = models.DateTimeField(default=timezone.now, help_text="When the file was deleted.")
    attempts = models.PositiveIntegerField(default=0, help_text="How many times deleting the bytes was tried.")
    retry_at = models.DateTimeField(default=timezone.now, help_text="When the next try is due.")
    last_error = models.TextField(blank=True, help_text="Why the last try failed.")

    class Meta:
        verbose_name = "pending deletion"
        indexes = [
            # retry_deletions, run by the expiry daemon's housekeeping.
            models.Index(fields=["retry_at"], name="bytes_to_delete_due_idx"),
        ]

    def __str__(self) -> str:
        return self.name

    def claim(self, using: str = "default") -> bool:
        """Take the next try: count it and put the one after it off, in one
        conditional UPDATE; False when another process took it first."""
        attempts = self.attempts + 1
        claimed = (
            BytesToDelete.objects.using(using)
            .filter(pk=self.pk, attempts=self.attempts)
            .update(attempts=attempts, retry_at=timezone.now() + backoff(attempts))
        )
        if claimed:
            self.attempts = attempts
        return bool(claimed)

    def delete_bytes(self, using: str = "default") -> bool:
        """Delete the bytes of a claimed try, then this record; on failure
        keep the record with the error and log a warning. Return whether
        the bytes are gone."""
        mine = BytesToDelete.objects.using(using).filter(pk=self.pk, attempts=self.attempts)
        try:
            bytes_storage().delete(self.name)
        except FileNotFoundError:
            pass  # already gone: what was asked
        except Exception as error:
            self.last_error = f"{type(error).__name__}: {error}"[:ERROR_MAX_LENGTH]
            mine.update(last_error=self.last_error)
            logger.warning(
                "could not delete the bytes of a deleted file, %s (try %d); trying again in %d s",
                self.name,
                self.attempts,
                backoff(self.attempts).total_seconds(),
                exc_info=True,
            )
            return False
        # Conditional: a later claim (this try outlived its back-off) now
        # owns the record; it finds the name gone and deletes the record.
        mine.delete()
        return True

    def try_now(self, using: str = "default") -> None:
        if self.claim(using):
            self.delete_bytes(using)


@receiver(post_delete, sender=StoredFile, dispatch_uid="sharing.delete_stored_bytes")
def delete_stored_bytes(sender, instance: StoredFile, using: str, **kwargs) -> None:
    """Record a deleted file's bytes in the deletion's transaction; delete
    them once it has committed.

    A receiver rather than code in sharing.models.removal.delete_file, so
    rows deleted by a cascade (a user deleted in admin) do not leave their
    bytes behind.
    """
    if not instance.content.name:
        return
    record = BytesToDelete.objects.using(using).create(name=instance.content.name)
    # robust: the deletion has committed whatever this try meets (a database
    # error here leaves the record, which the daemon retries).
    transaction.on_commit(partial(record.try_now, using), using=using, robust=True)


def any_pending(using: str = "default") -> bool:
    """Whether any deletion is recorded (one row of the table, or none)."""
    connection = connections[using]
    table = connection.ops.quote_name(BytesToDelete._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} LIMIT 1")
        return cursor.fetchone() is not None


def retry_deletions(limit: int, using: str = "default") -> int:
    """Try up to `limit` of the recorded deletions whose back-off has passed,
    the longest due first; return how many bytes were deleted.

    The first failure ends the call: the storage is likely down, and each
    try may last a connection timeout, which the expiry daemon calling this
    must not spend on every record. The failed record is put off by its
    back-off, so a name that cannot be deleted does not block the others.
    """
    if not any_pending(using):
        return 0  # the usual case: every deletion succeeded on commit
    due = BytesToDelete.objects.using(using).filter(retry_at__lte=timezone.now()).order_by("retry_at", "pk")
    deleted = 0
    for record in list(due[:limit]):
        if not record.claim(using):
            continue  # another process's try
        if not record.delete_bytes(using):
            break
        deleted += 1
    return deleted
