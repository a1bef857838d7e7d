"""How a share's end reads, in plain words: the one place every page, the
public link's plain-text answers and the owner's live updates take them from.

Each end state (sharing.models.EndState) has a sentence for the recipient
(the link's page and the line curl prints), a sentence for the owner (the
Manage page), a short status for the owner's tables, and the words the
"Time left" column shows in place of a countdown: what happened, not
"expired" for a link that was unshared or used up while its deadline is
still ahead. No sentence does arithmetic in bytes: a link's limit counts
copies, and that is how its readers think of it.
"""

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy, pgettext_lazy

from sharing.models import EndState


@dataclass(frozen=True)
class EndWords:
    recipient: Promise  # the link's page heading and its plain-text answer
    owner: Promise  # the owner's Manage page
    status: Promise  # the owner's status column
    time_left: Promise  # instead of a countdown
    since: Promise  # before the moment it ended, if known ("Unshared" at <time>)


END_WORDS = {
    EndState.EXPIRED: EndWords(
        recipient=gettext_lazy("This link has expired."),
        owner=gettext_lazy("This link has expired: the time you gave it ran out."),
        status=gettext_lazy("Expired"),
        time_left=pgettext_lazy("time left", "Expired"),
        since=gettext_lazy("Expired"),
    ),
    EndState.DOWNLOAD_LIMIT: EndWords(
        recipient=gettext_lazy("This link has been downloaded as many times as its sender allowed."),
        owner=gettext_lazy("This link has been downloaded as many times as you allowed."),
        status=gettext_lazy("Limit reached"),
        time_left=gettext_lazy("Downloaded as often as allowed"),
        since=gettext_lazy("Download limit reached"),
    ),
    EndState.UNSHARED: EndWords(
        recipient=gettext_lazy("This link has been unshared."),
        owner=gettext_lazy("You unshared this link; it no longer works."),
        status=gettext_lazy("Unshared"),
        time_left=pgettext_lazy("time left", "Unshared"),
        since=gettext_lazy("Unshared"),
    ),
    EndState.FILE_DELETED: EndWords(
        recipient=gettext_lazy("The shared file is no longer available."),
        owner=gettext_lazy("This link ended when its file was deleted."),
        status=gettext_lazy("Unshared"),
        time_left=gettext_lazy("File deleted"),
        since=gettext_lazy("Unshared when its file was deleted"),
    ),
    EndState.INFECTED: EndWords(
        recipient=gettext_lazy("This link has ended: malware was found in its file."),
        owner=gettext_lazy("This link ended when a malware scan found a virus in its file."),
        status=gettext_lazy("Malware found"),
        time_left=gettext_lazy("Malware found"),
        since=gettext_lazy("Ended: malware was found in a file"),
    ),
}

# A live share's status; it has no end words.
LIVE_STATUS = gettext_lazy("Active")

# What a recipient may still do at a link that reached its limit while a
# download was under way (its byte budget holds that download's rest).
RESUME_NOTE = gettext_lazy(
    "A download that was already under way can still be finished: resume it in your browser, or with curl -C - or "
    "wget -c."
)


def words_for(state: EndState) -> EndWords:
    return END_WORDS[state]


def status_label(state: EndState) -> str:
    return str(LIVE_STATUS if state == EndState.LIVE else END_WORDS[state].status)
