"""An infected file: recorded as such, its shares ended, its bytes removed
(or, with SCAN_INFECTED_BYTES=keep, left where they are for an
administrator: no share can serve them again), all in one transaction
with the verdict and what listeners write (webhook deliveries); the owner's
email goes after the commit.

The row stays (its name, its signature, "infected"), so the owner's pages
and the API say what happened to the file; the owner may delete it.
"""

from datetime import datetime
from functools import partial

from django.conf import settings
from django.db import transaction

from scanning import queue
from scanning.signals import file_infected
from sharing.models import BytesToDelete, ScanState, StoredFile
from sharing.models.removal import end_infected_shares


def quarantine(claim: queue.Claim, stored: StoredFile, signature: str, now: datetime) -> bool:
    """Record `stored` as infected by `signature` under the claim and act
    on it; return whether the claim still held (False: nothing was done)."""
    with transaction.atomic():
        if not queue.record(claim, ScanState.INFECTED, now, signature=signature):
            return False
        share_ids = end_infected_shares(stored)
        if settings.SCAN_INFECTED_BYTES == "delete" and stored.content.name:
            # Deleted once the verdict has committed (retried by the daemon
            # until the storage has done it: sharing.models.leftovers).
            record = BytesToDelete.objects.create(name=stored.content.name)
            StoredFile.objects.filter(pk=stored.pk).update(content="")
            transaction.on_commit(partial(record.try_now, "default"), robust=True)
        file_infected.send(
            sender=StoredFile,
            file_id=stored.pk,
            owner_id=stored.owner_id,
            name=stored.name,
            signature=signature,
            share_ids=share_ids,
            at=now,
        )
    return True
