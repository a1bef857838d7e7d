"""What upload requests tell whoever listens (notices, the expiry daemon)."""

from django.dispatch import Signal

# After the commit that created a request (kwargs: upload_request_id,
# expires_at): its deadline needs someone to keep it.
request_created = Signal()

# Inside the transaction in which a file arrives through a request (kwargs:
# received, the ReceivedFile with its file): what is written with it (a
# webhook's deliveries) commits or rolls back with the file.
file_arriving = Signal()

# After the commit in which a file arrived through a request
# (kwargs: upload_request_id, received_id).
file_received = Signal()

# After the commit that ended a request (kwargs: upload_request_id).
request_ended = Signal()
