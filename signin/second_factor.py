"""Who must give a second factor, and the one place it is enforced.

A session made with a local password (Django's ModelBackend) by a user
with an authenticator app set up, or by a staff user while
TOTP_REQUIRED_FOR_STAFF is on, is "waiting" until a code has been given
in it: SecondFactorMiddleware sends every page of such a session to the
code page (or, for staff with no app yet, to setting one up), the admin
and its own log-in page included, and the API does not take the session
at all. API tokens are not sessions: they keep working. Sessions made by
a trusted proxy or a single sign-on provider are not local: those sign
in with their own factors."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.models import AnonymousUser
from django.shortcuts import redirect
from django.urls import reverse

from signin import recovery
from signin.proxy import is_api
from signin.sessions import has_session_cookie
from signin.totp import accept_code, has_device

LOCAL_BACKEND = "django.contrib.auth.backends.ModelBackend"
# The user id whose code this session has seen.
SESSION_KEY = "signin.second_factor"


def is_local(request) -> bool:
    return request.session.get(BACKEND_SESSION_KEY) == LOCAL_BACKEND


def required_without_device(user) -> bool:
    return bool(user.is_staff and settings.TOTP_REQUIRED_FOR_STAFF)


def password_is_enough(user) -> bool:
    """May `user` sign in with the password alone (no app set up, none required)?"""
    return not has_device(user) and not required_without_device(user)


def code_accepted(user, code: str) -> bool:
    """Is `code` the user's current TOTP code or one of their recovery
    codes, unused? Uses it up if so."""
    return accept_code(user, code) or recovery.use_code(user, code)


def waiting(request) -> str | None:
    """ "code" or "set_up" when the request's session still owes its second
    factor (the page it must go to), else None."""
    user = request.user
    if not user.is_authenticated or not is_local(request) or request.session.get(SESSION_KEY) == user.pk:
        return None
    if has_device(user):
        return "code"
    return "set_up" if required_without_device(user) else None


def given(request) -> None:
    """The second factor was given: the session is complete (under a new
    key, as at any change of what a session may do)."""
    request.session.cycle_key()
    request.session[SESSION_KEY] = request.user.pk


# Pages a waiting session may reach: its way on (the code page, or setting
# up an app for staff who have none: never both, or a password alone could
# replace the app it is asked for), its way out, the language.
WAY_ON = {"code": "signin:code", "set_up": "signin:set-up"}
WAY_OUT = ("web:logout", "set_language")


class SecondFactorMiddleware:
    """After AuthenticationMiddleware and signin's other middleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        owed = waiting(request) if has_session_cookie(request) else None
        if owed is None:
            return self.get_response(request)
        if is_api(request):
            # Anonymous to DRF's session authentication; a token still works.
            request.user = AnonymousUser()
            return self.get_response(request)
        target = reverse(WAY_ON[owed])
        if request.path_info == target or request.path_info in {reverse(name) for name in WAY_OUT}:
            return self.get_response(request)
        return redirect(f"{target}?{urlencode({'next': request.get_full_path()})}")
