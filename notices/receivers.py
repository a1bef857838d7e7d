"""The sharing app's signals, answered with email notices off the request thread."""

from django.dispatch import receiver

from notices.mail import notify_first_download
from notices.worker import default_worker
from sharing.signals import share_downloaded


@receiver(share_downloaded, dispatch_uid="notices.first_download")
def first_download_notice(sender, share_id, **kwargs):
    # Sent after the download's commit: the claim on the worker thread sees it.
    default_worker().submit(notify_first_download, share_id)
