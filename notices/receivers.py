"""The sharing app's, upload requests' and scans' signals, answered with
email notices off the request thread."""

from functools import partial

from django.db import transaction
from django.dispatch import receiver

from collect.signals import file_received
from notices.mail import notify_file_arrived, notify_file_infected, notify_first_download
from notices.worker import default_worker
from scanning.signals import file_infected
from sharing.signals import share_downloaded


@receiver(share_downloaded, dispatch_uid="notices.first_download")
def first_download_notice(sender, share_id, **kwargs):
    # Sent after the download's commit: the claim on the worker thread sees it.
    default_worker().submit(notify_first_download, share_id)


@receiver(file_received, dispatch_uid="notices.file_arrived")
def file_arrived_notice(sender, received_id, **kwargs):
    # Sent after the arrival's commit, once.
    default_worker().submit(notify_file_arrived, received_id)


@receiver(file_infected, dispatch_uid="notices.file_infected")
def file_infected_notice(sender, **kwargs):
    # Sent inside the verdict's transaction: the mail goes once it commits.
    transaction.on_commit(partial(default_worker().submit, partial(notify_file_infected, **kwargs)))
