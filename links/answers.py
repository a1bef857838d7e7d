"""What a public link says when it does not send the file: a page for
browsers, one plain line for everything else (curl, wget, scripts)."""

from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from pages.end_states import END_WORDS, RESUME_NOTE
from ratelimit.waits import wait_in_words
from sharing.models import EndState, Share

# kind: (status, plain-text message). Lazy: each is read in the language of
# the request it answers (a script's too: one that sends no Accept-Language
# gets the deployment's LANGUAGE_CODE).
ANSWERS = {
    "no_such_link": (404, gettext_lazy("No such link.")),
    "no_such_file": (404, gettext_lazy("This link holds no such file.")),
    "no_preview": (404, gettext_lazy("This file has no preview here; download it instead.")),
    "not_sealed": (404, gettext_lazy("This link is not end-to-end encrypted: it has no sealed metadata.")),
    # /s/<token>/decrypted/<n> is answered by the link page's service worker;
    # the server sees it only when no page handed that worker the key.
    "decrypted_here": (
        404,
        gettext_lazy(
            "This address saves a file decrypted by the link's page: open the whole link, with the part after #, "
            "and use its Download button."
        ),
    ),
    "not_wrapped": (
        404,
        gettext_lazy("This link has no password-wrapped key: open it with the whole link, the part after # included."),
    ),
    # How a link that ended reads is pages.end_states's, for every page.
    "expired": (410, END_WORDS[EndState.EXPIRED].recipient),
    "download_limit": (410, END_WORDS[EndState.DOWNLOAD_LIMIT].recipient),
    "unshared": (410, END_WORDS[EndState.UNSHARED].recipient),
    "file_gone": (410, END_WORDS[EndState.FILE_DELETED].recipient),
    "infected": (410, END_WORDS[EndState.INFECTED].recipient),
    # Retry-After says when to look again (links.views.SCAN_RETRY_AFTER).
    "being_checked": (503, gettext_lazy("This file is being checked for viruses; try again in a moment.")),
    "scan_withheld": (
        403,
        gettext_lazy("This file could not be checked for viruses, and this service does not share such files."),
    ),
    "budget_short": (
        410,
        gettext_lazy("What is left of this link's download limit does not cover what you asked for."),
    ),
    "password_required": (403, gettext_lazy("This link needs a password: send it in the X-Share-Password header.")),
    "wrong_password": (403, gettext_lazy("Wrong password.")),
    "rate_limited": (429, gettext_lazy("Too many requests from your address.")),
    "password_limited": (
        429,
        gettext_lazy(
            "Too many wrong passwords for this link from your address. If you are its recipient, ask the sender "
            "to check the password."
        ),
    ),
    "busy": (503, gettext_lazy("The service is busy; try again in a moment.")),
    "budget_held": (
        503,
        gettext_lazy(
            "Downloads of this link still in progress hold what is left of its download limit; try again in a moment."
        ),
    ),
}

PAGE_CSP = (
    # connect-src: a limited link's page asks itself for the downloads left (liveleft.js).
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
    "connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def wants_html(request) -> bool:
    """Whether the client asked for a page: browsers list text/html in Accept;
    curl, wget and most scripts send */* or nothing."""
    for item in request.headers.get("Accept", "").split(","):
        media_type, *params = (part.strip() for part in item.split(";"))
        if media_type.lower() in ("text/html", "application/xhtml+xml"):
            quality = next((p[2:] for p in params if p.lower().startswith("q=")), "1")
            try:
                if float(quality) > 0:
                    return True
            except ValueError:
                continue
    return False


# The answer a recipient gets for each way a share can have ended (Share.fate).
KIND_OF_STATE = {
    EndState.EXPIRED: "expired",
    EndState.DOWNLOAD_LIMIT: "download_limit",
    EndState.UNSHARED: "unshared",
    EndState.FILE_DELETED: "file_gone",
    EndState.INFECTED: "infected",
}


def ended_kind(share: Share, now=None) -> str | None:
    """Why `share` may not serve at `now`, or None if it may."""
    fate = share.fate(now)
    return None if fate.live else KIND_OF_STATE[fate.state]


def refusal_kind(share: Share, *, ranged: bool) -> str:
    """Why a live-looking link refused a response its byte budget did not
    cover: ended, short for good, or, for a range (a resume, a parallel
    client's piece while its first connection still runs), short only while
    other responses still hold bytes they may give back (Share.bytes_reserved),
    so a retry may be served. A new whole download whose copies are all taken
    is refused for good: the downloads holding them nearly always finish."""
    kind = ended_kind(share) or "budget_short"
    if ranged and kind in ("download_limit", "budget_short") and share.bytes_reserved:
        return "budget_held"
    return kind


# An encrypted link's page (links/static/links/receive.js) also registers its
# service worker and shows images it decrypted itself (blob: URLs).
RECEIVING_PAGE_CSP = PAGE_CSP.replace("img-src 'self' data:;", "img-src 'self' data: blob:; worker-src 'self';")


def with_page_headers(response: HttpResponse, *, csp: str = PAGE_CSP) -> HttpResponse:
    response["Content-Security-Policy"] = csp
    response["Cache-Control"] = "no-store"
    response["Vary"] = "Accept"
    return response


def budget_note(share: Share | None) -> str:
    """What a link that reached its download limit adds: that a download
    already under way may still be finished, while its byte budget holds
    that download's rest (sharing.models.budget). Never the bytes themselves:
    a recipient counts downloads, not bytes."""
    if share is None or not share.bytes_left:
        return ""
    return str(RESUME_NOTE)


def answer(request, kind: str, *, share: Share | None = None, retry_after: int | None = None, **context):
    """The refusal `kind` as a page or a line, with its status."""
    status, lazy_message = ANSWERS[kind]
    message = str(lazy_message)
    note = budget_note(share) if kind == "download_limit" else ""
    wait = wait_in_words(retry_after) if retry_after is not None and status == 429 else ""
    if wait:
        note = _("Try again in %(wait)s.") % {"wait": wait}
    if wants_html(request):
        context = {
            "kind": kind,
            "message": message,
            "share": share,
            "retry_after": retry_after,
            "budget_note": note,
            "wait": wait,
            **context,
        }
        response = render(request, "links/ended.html", context, status=status)
    else:
        text = f"{message} {note}" if note else message
        response = HttpResponse(f"{text}\n", status=status, content_type="text/plain; charset=utf-8")
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return with_page_headers(response)
