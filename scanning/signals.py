"""What the scans tell whoever listens, so `scanning` never imports them.

file_cleared is sent INSIDE the transaction that recorded a file's first
servable verdict (clean, or too big under a policy that serves it) for a
file that was never cleared before, once its conditional UPDATE said so:
what a listener writes (an upload request's arrival and its webhook
deliveries) commits or rolls back with the verdict. Arguments: file_id.

file_infected is sent AFTER the commit that recorded a file as infected and
ended its shares. Arguments: file_id, owner_id, name, signature, share_ids
(the shares that ended), at.
"""

from django.dispatch import Signal

file_cleared = Signal()
file_infected = Signal()
