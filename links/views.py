"""The public link, for people and for scripts.

GET /s/<token> shows a browser (Accept: text/html) the landing page and
sends anyone else the share (its file, or a zip of its files when it holds
several), so existing links and scripts keep working; GET /s/<token>/download
always sends the share; /s/<token>/files/<n> sends its n-th file and
/s/<token>/all.zip all of them as one zip; /s/<token>/sealed an encrypted
link's sealed metadata (and its wrapped secret, X-Wrapped-Secret);
/s/<token>/key the public parameters that derive the key unwrapping that
secret from a password; /s/<token>/receive.js the service worker its page
decrypts the files with; POST /s/<token> takes the link's
password from the landing page's form. Viewing the page counts nothing;
sending bytes is decided by links.downloads.
"""

import base64
import logging
from functools import partial

from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods, require_safe

from links import downloads
from links.answers import (
    PAGE_CSP,
    RECEIVING_PAGE_CSP,
    answer,
    ended_kind,
    refusal_kind,
    wants_html,
    with_page_headers,
)
from links.guards import header_password, request_allowed, try_password
from links.payloads import ArchivePayload, FileMissing, FilePayload
from links.previews import SEALED_PREVIEW_MAX, preview_kind, preview_of, previews_allowed
from links.tickets import give_unlock, is_unlocked
from pages.owners import owner_shown
from ratelimit.limits import CountersUnavailable
from ratelimit.tries import tries_left_in_words
from sharing.models import ScanState, Share, sealed_metadata_of, wrapped_secret_of
from sharing.models.lookup import share_by_token
from sharing.models.sealed import wrapped_iterations, wrapped_salt
from storage.errors import StorageUnavailable

logger = logging.getLogger(__name__)

# Seconds a client is told to wait before asking again for a file being
# checked for viruses (a scan of a few MB takes well under a second).
SCAN_RETRY_AFTER = 5


def find(token: str) -> Share | None:
    return share_by_token(token)


def guarded(view):
    """Rate-limit per client address; a database too busy to answer (or
    rate counters or the file store out of reach) is a 503 with Retry-After, never a 500;
    tokens appear in logs shortened."""

    def wrapped(request, token: str, **kwargs):
        try:
            allowed, retry_after = request_allowed(request)
            if not allowed:
                return answer(request, "rate_limited", retry_after=retry_after)
            response = view(request, token, **kwargs)
        except (DatabaseError, CountersUnavailable, StorageUnavailable):
            logger.exception("Public link %s… could not reach the database, the rate counters or the files", token[:6])
            return answer(request, "busy", retry_after=1)
        response["Vary"] = "Accept"
        return response

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


# csrf_exempt: the method is checked first (405 with Allow, not the CSRF
# failure page); the password form's POST is CSRF-checked by itself.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
@guarded
def link(request, token: str):
    """The landing page for browsers, the file for everyone else."""
    if request.method == "POST":
        return csrf_protect(unlock)(request, token)
    if wants_html(request):
        return landing(request, token)
    return send(request, token)


@csrf_exempt  # nothing but GET and HEAD get past require_safe
@require_safe
@guarded
def download(request, token: str):
    """Always the share's bytes (the landing page's Download button)."""
    return send(request, token)


@csrf_exempt
@require_safe
@guarded
def file_download(request, token: str, position: str):
    """One file of the share."""
    return send(request, token, pick=partial(one_file, int(position)))


@csrf_exempt
@require_safe
@guarded
def file_preview(request, token: str, position: str):
    """One file of the share shown in the browser (links.previews)."""
    return send(request, token, pick=partial(preview_of, int(position)), inline=True, missing="no_preview")


@csrf_exempt
@require_safe
@guarded
def archive(request, token: str):
    """Every file of the share as one zip ("Download all")."""
    return send(request, token, pick=ArchivePayload)


@csrf_exempt
@require_safe
@guarded
def sealed(request, token: str):
    """An end-to-end encrypted link's sealed metadata, for the page or client
    holding the link's #secret (sharing.models.sealed). It counts nothing;
    the link's end and its password guard it as they guard the files."""
    share, refusal = live_share(request, token)
    if refusal is None:
        refusal = password_refusal(request, share, token)
    if refusal is not None:
        return refusal
    blob = sealed_metadata_of(share)
    if blob is None:
        return answer(request, "not_sealed", share=share)
    response = HttpResponse(blob, content_type="application/octet-stream")
    wrapped = wrapped_secret_of(share)
    if wrapped is not None:
        response["X-Wrapped-Secret"] = base64url(wrapped)
    response["Cache-Control"] = "no-store"
    return with_page_headers(response)


# The worker's own policy: it loads ece.js and fetches the link's files.
WORKER_CSP = "default-src 'none'; script-src 'self'; connect-src 'self'"


@csrf_exempt  # nothing but GET and HEAD get past require_safe
@require_safe
def receive_worker(request, token: str):
    """The service worker that decrypts an encrypted link's files as they
    download (links/templates/links/receive_worker.js). Served under the
    link's own path, so its scope is /s/<token>/; the same script for every
    link, so it asks nothing of the database."""
    response = render(request, "links/receive_worker.js", content_type="text/javascript; charset=utf-8")
    response["Content-Security-Policy"] = WORKER_CSP
    response["Cache-Control"] = "no-cache"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@csrf_exempt
@require_safe
def decrypted(request, token: str, position: str):
    """Where the page's service worker saves a decrypted file: reaching the
    server means no page of this browser gave that worker the key."""
    return answer(request, "decrypted_here")


@csrf_exempt
@require_safe
@guarded
def key(request, token: str):
    """How to derive, from a password, the key that unwraps an encrypted
    link's secret: public (the derivation's salt and cost, nothing secret),
    so asked before the password is proved; the wrapped secret itself comes
    only with /sealed, behind the password's verifier. Counts nothing."""
    share, refusal = live_share(request, token)
    if refusal is not None:
        return refusal
    wrapped = wrapped_secret_of(share)
    if wrapped is None:
        return answer(request, "not_wrapped", share=share)
    parameters = {
        "kdf": "PBKDF2-SHA256",
        "iterations": wrapped_iterations(wrapped),
        "salt": base64url(wrapped_salt(wrapped)),
    }
    return with_page_headers(JsonResponse(parameters))


def base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def live_share(request, token: str):
    """The link's share and None while it may be opened; else None and the
    answer that says why (no such link, or how it ended)."""
    share = find(token)
    if share is None:
        return None, answer(request, "no_such_link")
    kind = ended_kind(share)
    if kind is not None:
        return None, answer(request, kind, share=share)
    return share, None


def whole(share: Share):
    """What the link itself sends: its file, or the zip of several."""
    files = share.files
    return FilePayload(files[0]) if len(files) == 1 else ArchivePayload(share)


def one_file(position: int, share: Share):
    stored = share.file_at(position)
    return None if stored is None else FilePayload(stored)


def landing(request, token: str, *, password_error: bool = False, tries_left: int | None = None, status: int = 200):
    share, refusal = live_share(request, token)
    if refusal is not None:
        return refusal
    locked = share.has_password and not is_unlocked(request, share)
    files = share.files
    withheld = scan_refusal(share)
    shows_previews = previews_allowed(share)
    sealed = not locked and sealed_metadata_of(share) is not None
    context = {
        "share": share,
        "locked": locked,
        "password_error": password_error,
        "tries_left": "" if tries_left is None else tries_left_in_words(tries_left),
        "files": files,
        "entries": [{"file": stored, "preview": shows_previews and preview_kind(stored)} for stored in files],
        "several": len(files) > 1,
        "title": share.title,
        "file_name": files[0].name,
        "file_size": filesizeformat(share.size),
        "file_size_bytes": share.size,
        "content_type": files[0].content_type,
        "sha256": files[0].sha256,
        "archive_size_bytes": archive_size(share) if len(files) > 1 else None,
        "shared_by": shared_by(share),
        "ms_left": max(0, int((share.expires_at - timezone.now()).total_seconds() * 1000)),
        "being_checked": withheld == "being_checked",
        "scan_withheld": withheld == "scan_withheld",
        "scan_retry_after": SCAN_RETRY_AFTER,
        "sealed": sealed,
        "sealed_preview_max": SEALED_PREVIEW_MAX,
        "previews_allowed": shows_previews,
        # A wrapped link's password is turned into its verifier in the
        # browser (links/static/links/sealed_unlock.js): never posted raw.
        "wrapped": locked and wrapped_secret_of(share) is not None,
    }
    csp = RECEIVING_PAGE_CSP if sealed else PAGE_CSP
    return with_page_headers(render(request, "links/landing.html", context, status=status), csp=csp)


def scan_refusal(share: Share) -> str | None:
    """Why the share's files may not be sent yet as their scans stand
    (sharing.models.scans), or None: being checked (a scan is owed or
    being retried), or withheld for good under the policy (too big to
    scan, or a failed scan with fail-closed, and no scan queued)."""
    held = [stored for stored in share.files if not stored.scan_allows]
    if not held:
        return None
    if any(stored.scan_state == ScanState.PENDING or stored.scan_due_at is not None for stored in held):
        return "being_checked"
    return "scan_withheld"


def archive_size(share: Share) -> int | None:
    """The length of the share's zip (None when a file's bytes are missing:
    the page still lists the files, and the zip answers that it is gone)."""
    try:
        return ArchivePayload(share).size
    except FileMissing:
        return None


def shared_by(share: Share) -> str:
    """Who shared the link, as its page names them ("" when LINK_SHOWS_OWNER is off)."""
    return owner_shown(share.owner)


def unlock(request, token: str):
    """Check the landing page's password form; on success remember it in a
    cookie for this link and go back to the page (POST, redirect, GET)."""
    share = find(token)
    check = try_password(request, share, token, request.POST.get("password", ""))
    if check.outcome == "rate_limited":
        return answer(request, "password_limited", retry_after=check.retry_after)
    if check.outcome == "wrong":
        if share is None or ended_kind(share) is not None:
            return answer(request, "wrong_password")
        return landing(request, token, password_error=True, tries_left=check.tries_left, status=403)
    response = redirect("public-share", token=token)
    response.status_code = 303
    give_unlock(response, share)
    return response


def password_refusal(request, share: Share, token: str):
    """The answer for a link with a password not unlocked by this browser
    nor proved by X-Share-Password; None when it may go on."""
    if not share.has_password or is_unlocked(request, share):
        return None
    given = header_password(request)
    if given is None:
        return answer(request, "password_required", share=share)
    check = try_password(request, share, token, given)
    if check.outcome == "rate_limited":
        return answer(request, "password_limited", retry_after=check.retry_after)
    if check.outcome == "wrong":
        return answer(request, "wrong_password")
    return None


def send(request, token: str, pick=whole, *, inline: bool = False, missing: str = "no_such_file"):
    """Send what `pick(share)` chooses (a links.payloads payload; None: the
    share has no such thing, answered as `missing`), once the link's checks
    pass; `inline`: to be shown in the browser (a preview)."""
    share = find(token)
    if share is None:
        return answer(request, "no_such_link")
    kind = ended_kind(share)
    # Cheap early answer for links that have plainly ended; the authoritative
    # check is the conditional UPDATE in downloads.serve. A link that reached
    # its limit may still send a range its byte budget holds (a resume).
    if kind is not None and not (kind == "download_limit" and "Range" in request.headers):
        return answer(request, kind, share=share)
    locked = password_refusal(request, share, token)
    if locked is not None:
        return locked
    withheld = scan_refusal(share)
    if withheld is not None:
        # The early answer; the download's UPDATE asks the same rule.
        return answer(
            request, withheld, share=share, retry_after=SCAN_RETRY_AFTER if withheld == "being_checked" else None
        )
    payload = pick(share) if share.files else None
    if payload is None:
        return answer(request, missing if share.files else "file_gone", share=share)
    try:
        response = downloads.serve(request, share, payload, inline=inline)
    except FileMissing as missing:
        logger.warning("Share %s points at missing bytes %s", share.pk, missing)
        return answer(request, "file_gone", share=share)
    if response is None:
        # Refused by the UPDATE: re-read to say why (unshared, expired or
        # used up meanwhile; or, still live, what its budget has left does
        # not cover what was asked for).
        current = find(token)
        if current is None or not current.files:
            return answer(request, "file_gone", share=current)
        withheld = scan_refusal(current)
        if ended_kind(current) is None and withheld is not None:
            return answer(request, withheld, share=current, retry_after=SCAN_RETRY_AFTER)
        kind = refusal_kind(current, ranged="Range" in request.headers)
        return answer(request, kind, share=current, retry_after=1 if kind == "budget_held" else None)
    return response
