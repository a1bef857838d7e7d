"""What the uploads app tells whoever listens: the expiry daemon's notifier,
and the apps whose uploads these are (collect)."""

from django.dispatch import Signal

# Sent after the commit that created an upload (kwargs: upload_id, expires_at):
# its deadline needs someone to keep it.
upload_created = Signal()

# Sent inside the transaction that removes an upload, before its row is
# locked (kwargs: upload_id): an app whose rows come before uploads in the
# order locks are taken (collect: the upload's request) locks them now, so
# two transactions never wait for each other's rows.
upload_removing = Signal()

# Sent inside the transaction that deletes an upload's row, by the one
# remover that found it (kwargs: upload_id, length, finished): what was set
# aside for an unfinished one can be given back exactly once.
upload_removed = Signal()

# Sent inside the transaction that stores a finished upload's file
# (kwargs: upload_id, file): it commits or rolls back with the file.
upload_finished = Signal()
