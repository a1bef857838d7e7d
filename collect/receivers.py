"""The uploads app's signals, for the uploads made through a request, and
the scans', for the files that arrive once scanned."""

from django.dispatch import receiver

from collect.models import ReceivedFile
from collect.places import announce_arrival, give_back, lock_request_of, mark_arrived
from scanning.signals import file_cleared
from uploads.signals import upload_finished, upload_removed, upload_removing


@receiver(upload_removing, dispatch_uid="collect.lock_first")
def lock_the_request_first(sender, upload_id, **kwargs):
    lock_request_of(upload_id)


@receiver(upload_removed, dispatch_uid="collect.give_back")
def unfinished_upload_removed(sender, upload_id, finished, **kwargs):
    if not finished:
        give_back(upload_id)


@receiver(upload_finished, dispatch_uid="collect.arrived")
def upload_arrived(sender, upload_id, file, **kwargs):
    received = ReceivedFile.objects.filter(upload_id=upload_id).first()
    if received is not None:  # else an upload of the API's, not a request's
        mark_arrived(received, file)


@receiver(file_cleared, dispatch_uid="collect.cleared")
def scanned_file_arrived(sender, file_id, **kwargs):
    # In the verdict's transaction: the arrival commits with it.
    for received in ReceivedFile.objects.filter(file_id=file_id, finished_at__isnull=False).select_related("file"):
        announce_arrival(received)
