"""The time that decides a share's fate, read once its lock is held."""

from datetime import datetime

from django.db import connections, models
from django.utils import timezone


def locked_now(shares: models.QuerySet) -> datetime:
    """Lock `shares`' rows, then return the time: the time that decides.

    Call inside transaction.atomic(). On SQLite the IMMEDIATE transaction
    already holds the database's write lock; on PostgreSQL the rows are locked
    here (FOR NO KEY UPDATE, which waits for another writer). A clock read
    before such a wait would judge a download, renewal or unshare by a time
    that had passed by the time the UPDATE ran.
    """
    if connections[shares.db].features.has_select_for_update:
        list(shares.select_for_update(no_key=True).order_by("pk").values_list("pk", flat=True))
    return timezone.now()
