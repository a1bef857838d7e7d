"""How a share reads to its owner, at one instant: the same words for the
page as rendered and for the live dashboard's updates, so a row never
changes its wording when the script refreshes it."""

from dataclasses import asdict, dataclass
from datetime import datetime

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from sharing.models import Share

STATUS_LABELS = {
    Share.Status.ACTIVE: gettext_lazy("Active"),
    Share.Status.EXPIRED: gettext_lazy("Expired"),
    Share.Status.UNSHARED: gettext_lazy("Unshared"),
}


def _status_label(status: str) -> str:
    return str(STATUS_LABELS[status])


def when(moment: datetime) -> str:
    """A moment as the pages print it (UTC; the script shows it in the reader's zone)."""
    return formats.date_format(moment, "j M Y, H:i:s") + " UTC"


def how_it_ended(share: Share, now: datetime) -> tuple[str, datetime] | tuple[None, None]:
    """(sentence, moment) for an ended share, or (None, None) for a live one.

    A share past its deadline that the daemon has not marked yet ended at its
    deadline: that is when its link stopped working.
    """
    status = share.effective_status(now)
    if status == Share.Status.ACTIVE:
        return None, None
    if share.status == Share.Status.ACTIVE:  # past its deadline, not yet marked
        return _("Expired"), share.expires_at
    sentences = {
        Share.EndReason.EXPIRED: _("Expired"),
        Share.EndReason.DOWNLOAD_LIMIT: _("Download limit reached"),
        Share.EndReason.UNSHARED: _("Unshared"),
        Share.EndReason.FILE_DELETED: _("Unshared when its file was deleted"),
    }
    return sentences.get(share.end_reason, _status_label(share.status)), share.ended_at


@dataclass(frozen=True)
class ShareState:
    id: int
    status: str
    status_label: str
    live: bool
    ms_left: int
    ended: str
    ended_at: str
    downloads: str
    downloads_left: str

    def as_json(self) -> dict:
        return asdict(self)


def share_state(share: Share, now: datetime) -> ShareState:
    status = share.effective_status(now)
    sentence, moment = how_it_ended(share, now)
    if share.max_downloads is None:
        downloads, left = str(share.total_downloads), _("unlimited")
    else:
        downloads = _("%(count)s of %(limit)s") % {"count": share.total_downloads, "limit": share.max_downloads}
        left = str(share.downloads_left)
    live = status == Share.Status.ACTIVE
    return ShareState(
        id=share.pk,
        status=status,
        status_label=_status_label(status),
        live=live,
        ms_left=max(0, int((share.expires_at - now).total_seconds() * 1000)) if live else 0,
        ended=_("%(how)s at %(when)s") % {"how": sentence, "when": when(moment)} if sentence else "",
        ended_at=moment.isoformat() if moment else "",
        downloads=downloads,
        downloads_left=left,
    )
