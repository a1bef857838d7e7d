"""The email notices themselves: who gets them, what they say, how they go.

Messages are plain-text Django templates (templates/notices/), sent with
Django's email framework to the share owner's User.email through
EMAIL_BACKEND (the console by default; SMTP configured from the environment,
see settings). An owner without an address is skipped and logged. Every
function here runs on the mail worker thread (notices.worker), after the
notice's claim has committed.

No reader's browser is there to ask for a language: notices are written in
the deployment's LANGUAGE_CODE (docs/translations.md).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext, ngettext

from collect.models import ReceivedFile
from notices.claims import claim_first_download
from sharing.models import Share, ShareEvent
from sharing.models.receipts import first_copy_receipt, reached_percent

logger = logging.getLogger("notices")


def send_reminder(share_id: int) -> bool:
    """Send the (claimed) expiry reminder of `share_id`; return whether it went."""
    return _send(share_id, "reminder")


def notify_first_download(share_id: int) -> bool:
    """Claim the first-download notice of `share_id` and send it if this
    call claimed it; return whether a message went."""
    if not claim_first_download(share_id, timezone.now()):
        return False
    return _send(share_id, "first_download")


UNITS = (
    ("day", 86400, lambda count: ngettext("%(count)d day", "%(count)d days", count)),
    ("hour", 3600, lambda count: ngettext("%(count)d hour", "%(count)d hours", count)),
    ("minute", 60, lambda count: ngettext("%(count)d minute", "%(count)d minutes", count)),
)


def time_left(left: timedelta) -> str:
    """About how long is left, in the largest unit that fits (a reminder
    sent a little after its time still says "24 hours", not "1439 minutes"),
    in the active language."""
    seconds = max(left.total_seconds(), 0)
    for unit, size, words in UNITS:
        if seconds >= size * 2 or (unit == "hour" and seconds >= size):
            count = round(seconds / size)
            return words(count) % {"count": count}
    count = max(1, round(seconds / 60))
    return UNITS[-1][2](count) % {"count": count}


def _send(share_id: int, kind: str) -> bool:
    share = Share.objects.select_related("owner").prefetch_related("items__file").filter(pk=share_id).first()
    if share is None:
        logger.info("%s notice for share %s skipped: the share is gone", kind, share_id)
        return False
    address = share.owner.email
    if not address:
        logger.info("%s notice for share %s skipped: %s has no email address", kind, share_id, share.owner)
        return False
    with translation.override(settings.LANGUAGE_CODE):
        context = _share_context(share)
        if kind == "first_download":
            context["downloaded"] = what_was_downloaded(share)
            context["delivered"] = how_far_it_got(share)
        subject, body = _render(kind, context)
    return _mail(kind, f"share {share_id}", subject, body, address)


def what_was_downloaded(share: Share) -> str:
    """For a share of several files, what its first download was (a file's
    name, or all of them as a zip), as its history recorded it; "" for a
    share of one file."""
    if len(share.files) < 2:
        return ""
    first = share.events.filter(kind=ShareEvent.Kind.DOWNLOADED).order_by("at", "id").first()
    details = first.details if first is not None else {}
    if details.get("zip"):
        return gettext("all its files, as one zip")
    return next((stored.name for stored in share.files if stored.pk == details.get("file")), "")


def how_far_it_got(share: Share) -> str:
    """Whether the first download reached its recipient whole, as its
    receipt says (sharing.models.receipts); "" when there is none."""
    receipt = first_copy_receipt(share)
    if receipt is None:
        return ""
    if receipt.details.get("whole"):
        return gettext("The recipient received all of it.")
    return gettext("The download stopped at %(percent)s %% of it; the recipient may still resume it.") % {
        "percent": reached_percent(receipt.details)
    }


def notify_file_arrived(received_id: int) -> bool:
    """Tell the owner of an upload request that asked for it that a file
    arrived through it; return whether a message went. Sent once: the
    arrival's commit sends its signal once."""
    received = ReceivedFile.objects.select_related("request__owner").filter(pk=received_id).first()
    if received is None or not received.request.notify_by_email:
        return False
    upload_request = received.request
    address = upload_request.owner.email
    if not address:
        logger.info("file_arrived notice for upload request %s skipped: no email address", upload_request.pk)
        return False
    context = {"received": received, "upload_request": upload_request, "owner": upload_request.owner}
    with translation.override(settings.LANGUAGE_CODE):
        subject, body = _render("file_arrived", context)
    return _mail("file_arrived", f"upload request {upload_request.pk}", subject, body, address)


def notify_file_infected(*, owner_id: int, name: str, signature: str, share_ids: list[int], **kwargs) -> bool:
    """Tell a file's owner that its scan found malware (and what became of
    the file and its links); return whether a message went. Sent once: the
    verdict's commit sends its signal once."""
    owner = get_user_model().objects.filter(pk=owner_id).first()
    if owner is None or not owner.email:
        logger.info("file_infected notice for user %s skipped: no email address", owner_id)
        return False
    context = {
        "owner": owner,
        "name": name,
        "signature": signature,
        "ended": len(share_ids),
        "removed": settings.SCAN_INFECTED_BYTES == "delete",
    }
    with translation.override(settings.LANGUAGE_CODE):
        subject, body = _render("file_infected", context)
    return _mail("file_infected", f"file {name!r}", subject, body, owner.email)


def _mail(kind: str, about: str, subject: str, body: str, address: str) -> bool:
    try:
        send_mail(subject, body, None, [address])
    except Exception:
        # At most once: the claim (or the arrival) has committed, so this notice is not retried.
        logger.exception("%s notice for %s to %s failed", kind, about, address)
        return False
    logger.info("%s notice for %s sent to %s", kind, about, address)
    return True


def _share_context(share: Share) -> dict:
    return {
        "share": share,
        "owner": share.owner,
        "file_name": share.title,
        "time_left": time_left(share.expires_at - timezone.now()),
    }


def _render(kind: str, context: dict) -> tuple[str, str]:
    """The notice's subject and body, in the active language."""
    context = {**context, "site_url": settings.SITE_URL.rstrip("/")}
    # One line: a file name is the owner's own text, never a header break.
    subject = " ".join(render_to_string(f"notices/{kind}_subject.txt", context).split())
    return subject, render_to_string(f"notices/{kind}.txt", context)
