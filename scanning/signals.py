"""What the scans tell whoever listens, so `scanning` never imports them.

file_cleared is sent INSIDE the transaction that recorded the verdict that
ended a file's first wait (clean, or too big to scan; not infected), once its conditional UPDATE said so:
what a listener writes (an upload request's arrival and its webhook
deliveries) commits or rolls back with the verdict. Arguments: file_id.

file_infected is sent INSIDE the transaction that recorded a file as
infected and ended its shares (what a listener writes commits with the
verdict; an email waits for the commit). Arguments: file_id, owner_id, name, signature, share_ids
(the shares that ended), at.
"""

from django.dispatch import Signal

file_cleared = Signal()
file_infected = Signal()
