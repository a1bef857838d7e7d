"""The pages' colour theme: the reader's choice of system, light or dark,
kept in a cookie that a plain form sets, so it works without JavaScript.

Every page's <html> carries data-theme (the sheets read it; "system" leaves
the choice to prefers-color-scheme), and every page with the site's header
or footer carries the form (templates/theme_form.html).
"""

from django.conf import settings
from django.http import HttpResponseBadRequest, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

COOKIE = "theme"
SYSTEM = "system"
THEMES = {
    SYSTEM: gettext_lazy("System"),
    "light": gettext_lazy("Light"),
    "dark": gettext_lazy("Dark"),
}
COOKIE_AGE = 365 * 24 * 3600  # a choice of looks outlives any session


def theme_of(request) -> str:
    """The reader's theme; an unknown cookie value (an old or forged one) is the system's."""
    chosen = request.COOKIES.get(COOKIE, SYSTEM)
    return chosen if chosen in THEMES else SYSTEM


def theme(request) -> dict:
    """Context processor: the theme for <html data-theme> and the switcher's choices."""
    return {"theme": theme_of(request), "themes": THEMES.items()}


@require_POST
def set_theme(request):
    """POST theme=<name>&next=<path>: remember the theme, then go back to the page."""
    chosen = request.POST.get("theme", "")
    if chosen not in THEMES:
        allowed = ", ".join(THEMES)
        return HttpResponseBadRequest(
            _("Choose a theme among: %(allowed)s.") % {"allowed": allowed}, content_type="text/plain; charset=utf-8"
        )
    back = request.POST.get("next") or request.headers.get("Referer") or "/"
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = "/"
    response = HttpResponseRedirect(back)
    response.set_cookie(
        COOKIE, chosen, max_age=COOKIE_AGE, samesite="Lax", secure=settings.SESSION_COOKIE_SECURE, httponly=True
    )
    return response
