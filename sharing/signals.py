"""Signals other apps listen to, so `sharing` never imports them.

share_schedule_changed is sent after the transaction that created or renewed a
share has committed (never inside it: a listener such as the PostgreSQL NOTIFY
sender must not lengthen hot write transactions, and must not announce a row
that could still roll back). Arguments: share_id, expires_at.

share_downloaded is sent after a counted download of a share that asks for a
first-download notice (and had none yet, as the request saw it) commits.
Argument: share_id. The notices app claims the notice in the database, so a
notice is sent once however many downloads race.

share_events_saved is sent INSIDE the transaction that wrote new ShareEvent
rows (ShareEvent.record and save_all), after their INSERT, so a listener's
writes (the webhooks outbox) commit or roll back with the events. Arguments:
events (list of saved ShareEvent, ids set), using (database alias).
"""

from django.dispatch import Signal

share_schedule_changed = Signal()
share_downloaded = Signal()
share_events_saved = Signal()
