from django.db import models


class Lease(models.Model):
    """Who may run a singleton job (a name), and until when.

    runexpiry holds the "runexpiry" lease so that of several daemons only one
    expires shares and the others stand by. As a row (expiry/lease.py, daemons
    on several machines), taking and renewing it are conditional UPDATEs whose
    row count says who won. On SQLite a lock on a file decides
    (expiry/lease_lock.py) and the row only says who took it: expires_at is
    far in the future while it is held, the release time after a clean exit.
    """

    name = models.CharField(max_length=64, primary_key=True)
    owner = models.CharField(max_length=255, help_text="host:pid:random of the holding process.")
    expires_at = models.DateTimeField(help_text="Anyone may take the lease from this moment on.")

    def __str__(self) -> str:
        return f"{self.name} held by {self.owner}"
