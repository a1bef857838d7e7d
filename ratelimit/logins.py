"""Limits on password guessing at every log-in: the API token endpoint and
the admin's log-in page.

Each attempt is counted before the password is checked (hashing costs
~0.3 s of CPU by design, so an attempt refused here costs nothing), and a
successful log-in takes its counts back: the limits bind on failures,
exactly, however many attempts race. When the counters cannot be reached
(Redis down) log-ins pause with a 503 rather than go unlimited.

Three counts, so that a guesser pauses itself and not the account's owner
(usernames are on every public link's page):
- per client address, every attempt (LOGIN_ATTEMPTS_PER_ADDRESS): one
  address trying many usernames;
- per (username, address), failures (LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS):
  what stops one guesser, from its own address only; the owner, from
  theirs, still signs in;
- per username from all addresses, failures (LOGIN_FAILURES_PER_USERNAME):
  a ceiling ten times higher, for guessers spread over many addresses,
  which only they can reach.
Each attempt that fails is told how many are left before a pause
(Attempt.tries_left).
"""

import logging
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.core.exceptions import ValidationError
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ratelimit.limits import CountersUnavailable, RateLimit, client_address
from ratelimit.tries import tries_left_in_words
from ratelimit.waits import wait_in_words

logger = logging.getLogger(__name__)

WINDOW = 600
# Lazy: read in the language of the request that was refused.
TOO_MANY = gettext_lazy("Too many log-in attempts.")
PAUSED = gettext_lazy("Log-ins are paused for a moment: the attempt counter cannot be reached.")


class LoginRefused(Exception):
    """An attempt refused before its password was looked at."""

    def __init__(self, status: int, message, retry_after: int):
        # Read now, in the language of the request being refused: a lazy
        # translation is no str to code that joins or formats it (DRF's Throttled).
        message = str(message)
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after

    def sentence(self) -> str:
        return _("%(refusal)s Try again in %(wait)s.") % {
            "refusal": self.message,
            "wait": wait_in_words(self.retry_after),
        }


@dataclass(frozen=True)
class Attempt:
    """An attempt the limits let through."""

    tries_left: int  # attempts after this one before a limit refuses this client this username

    def tries_left_in_words(self) -> str:
        return tries_left_in_words(self.tries_left)


def _counts(request, username: str) -> tuple[tuple[RateLimit, str], ...]:
    """Each limit of an attempt with the identity it counts."""
    address = client_address(request)
    # Usernames differ by case only for Django; for guessing they are one.
    name = str(username or "").strip().lower()[:150]
    return (
        (RateLimit("login-address", limit=settings.LOGIN_ATTEMPTS_PER_ADDRESS, window=WINDOW), address),
        (
            RateLimit("login-visitor", limit=settings.LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS, window=WINDOW),
            f"{address}|{name}",
        ),
        (RateLimit("login-username", limit=settings.LOGIN_FAILURES_PER_USERNAME, window=WINDOW), name),
    )


def begin_attempt(request, username: str) -> Attempt:
    """Count an attempt; raise LoginRefused when a limit is reached."""
    try:
        counted = []
        for limit, ident in _counts(request, username):
            decision = limit.hit(ident)
            if not decision.allowed:
                for earlier, earlier_ident, _left in counted:
                    earlier.refund(earlier_ident)
                raise LoginRefused(429, TOO_MANY, decision.retry_after)
            counted.append((limit, ident, decision.remaining))
    except CountersUnavailable:
        logger.exception("Log-in attempt refused: the rate-limit counters cannot be reached")
        raise LoginRefused(503, PAUSED, 1) from None
    return Attempt(tries_left=min(left for _limit, _ident, left in counted))


def attempt_succeeded(request, username: str) -> None:
    """Take back the attempt of a successful log-in."""
    try:
        for limit, ident in _counts(request, username):
            limit.refund(ident)
    except CountersUnavailable:
        # The log-in stands; its attempt simply stays counted.
        logger.warning("Could not take back a successful log-in's attempt", exc_info=True)


def refused_admin_login(request, refused: LoginRefused) -> TemplateResponse:
    """The admin's log-in page again, with the refusal as its error and the
    refusal's status: a person sees the form, a script sees 429 or 503."""
    from django.contrib import admin
    from django.contrib.admin.forms import AdminAuthenticationForm

    class RefusedForm(AdminAuthenticationForm):
        def clean(self):
            # Never authenticate: the whole point is not to hash.
            raise ValidationError(refused.sentence(), code="throttled")

    form = RefusedForm(request, data=request.POST)
    context = {
        **admin.site.each_context(request),
        "title": _("Log in"),
        "subtitle": None,
        "app_path": request.get_full_path(),
        "username": request.user.get_username(),
        "form": form,
        REDIRECT_FIELD_NAME: request.POST.get(REDIRECT_FIELD_NAME, ""),
    }
    request.current_app = admin.site.name
    response = TemplateResponse(request, "admin/login.html", context, status=refused.status)
    response["Retry-After"] = str(refused.retry_after)
    return response


def throttled_admin_login(view):
    """Wrap the admin's log-in view (a POST of username and password that
    redirects on success)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        username = request.POST.get("username", "")
        try:
            attempt = begin_attempt(request, username)
        except LoginRefused as refused:
            return refused_admin_login(request, refused)
        response = view(request, *args, **kwargs)
        # The admin's LoginView answers a signed-in POST with a 302; a user
        # signed in before (not staff, say) may still post a wrong password.
        if response.status_code == 302 and request.user.is_authenticated:
            attempt_succeeded(request, username)
        else:
            say_tries_left(response, attempt)
        return response

    return wrapped


def say_tries_left(response, attempt: Attempt) -> None:
    """Add the tries left to the errors of the refused log-in form the
    admin's response is about to render (a TemplateResponse, still unrendered)."""
    form = (getattr(response, "context_data", None) or {}).get("form")
    if form is not None and form.errors:
        form.add_error(None, attempt.tries_left_in_words())
