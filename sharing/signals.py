"""Signals other apps listen to, so `sharing` never imports them.

share_schedule_changed is sent after the transaction that created or renewed a
share has committed (never inside it: a listener such as the PostgreSQL NOTIFY
sender must not lengthen hot write transactions, and must not announce a row
that could still roll back). Arguments: share_id, expires_at.

share_downloaded is sent once a counted download of a share that asks for a
first-download notice (and had none yet, as the request saw it) has closed
and its receipt committed, so the notice can say how far it got.
Argument: share_id. The notices app claims the notice in the database, so a
notice is sent once however many downloads race.

share_events_saved is sent INSIDE the transaction that wrote new ShareEvent
rows (ShareEvent.record and save_all), after their INSERT, so a listener's
writes (the webhooks outbox) commit or roll back with the events. Arguments:
events (list of saved ShareEvent, ids set), using (database alias), and
outboxed=True when the statement that wrote them also wrote the rows of
every registered outbox (sharing.models.outboxes), which then add nothing.

share_ended is sent INSIDE the transaction that ended a share by unsharing,
by its download limit or by a new limit (an end other than by time), once
its UPDATE has said so. Argument: file_ids (the files it still holds; empty
when all are gone). sharing.models.removal reaps them after the commit if
they are ephemeral.

shares_expired is sent once per committed expiry statement
(sharing.models.expiring, the one path that ends shares by time), after the
commit, with exactly the ids that statement's UPDATE ... RETURNING changed: a
share expired by another daemon, or renewed meanwhile, is never in it.
Receivers therefore see each expiry exactly once across any number of
daemons, and never one that rolled back. Arguments: share_ids (list of int),
ended_at (aware datetime), using (database alias).
"""

from django.dispatch import Signal

share_schedule_changed = Signal()
share_downloaded = Signal()
share_events_saved = Signal()
share_ended = Signal()
shares_expired = Signal()
