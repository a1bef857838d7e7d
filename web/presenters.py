"""How a share reads to its owner, at one instant: the same words for the
page as rendered and for the live dashboard's updates, so a row never
changes its wording when the script refreshes it."""

from dataclasses import asdict, dataclass
from datetime import datetime

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from pages import units
from pages.end_states import END_WORDS, status_label
from sharing.models import Share, sealed_share_ids
from sharing.models.receipts import whole_copies


def when(moment: datetime) -> str:
    """A moment as the pages print it (UTC; the script shows it in the reader's zone)."""
    return units.moment(moment)


def how_it_ended(share: Share, now: datetime) -> tuple[str, datetime | None] | tuple[None, None]:
    """(sentence, moment) for an ended share, or (None, None) for a live one.

    A share past its deadline that the daemon has not marked yet ended at its
    deadline: that is when its link stopped working.
    """
    fate = share.fate(now)
    if fate.live:
        return None, None
    return str(END_WORDS[fate.state].since), fate.since


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
    ended_words: str
    time_left: str
    ended_at: str
    ended_when: str
    downloads: str
    downloads_left: str
    in_full: str  # "downloaded in full 2 times": receipts that reached the file's end
    # End-to-end encrypted: the server knows no name to show (docs/encryption.md).
    sealed: bool

    def as_json(self) -> dict:
        return asdict(self)


def in_full_words(count: int) -> str:
    if not count:
        return ""
    return ngettext("downloaded in full %(count)s time", "downloaded in full %(count)s times", count) % {"count": count}


def share_rows(shares, now: datetime) -> list[tuple[Share, ShareState]]:
    """Each of `shares` with its state, their receipts counted and the
    encrypted ones found in one query each."""
    shares = list(shares)
    in_full = whole_copies(share.pk for share in shares) if shares else {}
    sealed = sealed_share_ids(share.pk for share in shares) if shares else set()
    return [
        (share, share_state(share, now, in_full=in_full.get(share.pk, 0), sealed=share.pk in sealed))
        for share in shares
    ]


def share_state(share: Share, now: datetime, *, in_full: int | None = None, sealed: bool | None = None) -> ShareState:
    """`in_full`: how many downloads reached the file's end, and `sealed`,
    whether it is encrypted, if known already."""
    if in_full is None:
        in_full = whole_copies([share.pk]).get(share.pk, 0)
    if sealed is None:
        sealed = bool(sealed_share_ids([share.pk]))
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
        status_label=status_label(fate.state),
        live=live,
        ms_left=max(0, int((share.expires_at - now).total_seconds() * 1000)) if live else 0,
        ended=_ended_text(sentence, moment),
        ended_words="" if fate.live else str(END_WORDS[fate.state].owner),
        time_left="" if fate.live else str(END_WORDS[fate.state].time_left),
        ended_at=moment.isoformat() if moment else "",
        ended_when=when(moment) if moment else "",
        downloads=downloads,
        downloads_left=left,
        in_full=in_full_words(in_full),
        sealed=sealed,
    )
