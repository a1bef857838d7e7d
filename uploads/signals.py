"""What the uploads app tells whoever listens (the expiry daemon's notifier)."""

from django.dispatch import Signal

# Sent after the commit that created an upload (kwargs: upload_id, expires_at):
# its deadline needs someone to keep it.
upload_created = Signal()
