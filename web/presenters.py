"""How a share reads to its owner, at one instant: the same words for the
page as rendered and for the live dashboard's updates, so a row never
changes its wording when the script refreshes it."""

from dataclasses import asdict, dataclass
from datetime import datetime

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from sharing.models import EndState, Share

# The status column's word for each end state (Share.fate): a link that
# ended by its download limit says so, not "Expired" as the API's status does.
STATUS_LABELS = {
    EndState.LIVE: gettext_lazy("Active"),
    EndState.EXPIRED: gettext_lazy("Expired"),
    EndState.DOWNLOAD_LIMIT: gettext_lazy("Limit reached"),
    EndState.UNSHARED: gettext_lazy("Unshared"),
    EndState.FILE_DELETED: gettext_lazy("Unshared"),
    EndState.INFECTED: gettext_lazy("Malware found"),
}


def when(moment: datetime) -> str:
    """A moment as the pages print it (UTC; the script shows it in the reader's zone)."""
    return formats.date_format(moment, "j M Y, H:i:s") + " UTC"


# What an owner reads for each way a share can have ended (Share.fate).
SENTENCES = {
    EndState.EXPIRED: gettext_lazy("Expired"),
    EndState.DOWNLOAD_LIMIT: gettext_lazy("Download limit reached"),
    EndState.UNSHARED: gettext_lazy("Unshared"),
    EndState.FILE_DELETED: gettext_lazy("Unshared when its file was deleted"),
    EndState.INFECTED: gettext_lazy("Ended: malware was found in a file"),
}


def how_it_ended(share: Share, now: datetime) -> tuple[str, datetime | None] | tuple[None, None]:
    """(sentence, moment) for an ended share, or (None, None) for a live one.

    A share past its deadline that the daemon has not marked yet ended at its
    deadline: that is when its link stopped working.
    """
    fate = share.fate(now)
    if fate.live:
        return None, None
    return str(SENTENCES[fate.state]), fate.since


def _ended_text(sentence: str | None, moment: datetime | None) -> str:
    """The words before the moment (a <time> the script shows in the
    reader's zone, like every other moment on the page)."""
    if sentence is None:
        return ""
    if moment is None:  # a live share whose file row went without ending it
        return sentence
    return _("%(how)s at") % {"how": sentence}


@dataclass(frozen=True)
class ShareState:
    id: int
    status: str
    status_label: str
    live: bool
    ms_left: int
    ended: str
    ended_at: str
    ended_when: str
    downloads: str
    downloads_left: str

    def as_json(self) -> dict:
        return asdict(self)


def share_state(share: Share, now: datetime) -> ShareState:
    fate = share.fate(now)
    status = fate.status
    sentence, moment = how_it_ended(share, now)
    if share.max_downloads is None:
        downloads, left = str(share.total_downloads), _("unlimited")
    else:
        # Downloads started, which a partial one can make more than the
        # limit: the limit is in copies' worth of bytes (downloads left).
        downloads = _("%(count)s (limit %(limit)s)") % {"count": share.total_downloads, "limit": share.max_downloads}
        left = str(share.downloads_left)
    live = status == Share.Status.ACTIVE
    return ShareState(
        id=share.pk,
        status=status,
        status_label=str(STATUS_LABELS[fate.state]),
        live=live,
        ms_left=max(0, int((share.expires_at - now).total_seconds() * 1000)) if live else 0,
        ended=_ended_text(sentence, moment),
        ended_at=moment.isoformat() if moment else "",
        ended_when=when(moment) if moment else "",
        downloads=downloads,
        downloads_left=left,
    )
