from django.contrib import admin
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.not_found import api_not_found
from api.urls import api_urlpatterns, request_urlpatterns
from api.views import TokenView
from pages.themes import set_theme
from ratelimit.logins import throttled_admin_login
from uploads.urls import api_urlpatterns as upload_urlpatterns
from webhooks.urls import api_urlpatterns as webhook_urlpatterns

urlpatterns = [
    # First: the public link is the busiest path, and nothing below matches s/.
    path("", include("links.urls")),
    # Ahead of admin.site.urls, so the admin's log-in is the throttled one.
    path("admin/login/", throttled_admin_login(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/auth/token/", TokenView.as_view(), name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/", include(api_urlpatterns)),
    path("api/", include(webhook_urlpatterns)),
    path("api/", include(upload_urlpatterns)),
    path("api/", include(request_urlpatterns)),
    # Last under /api/: anything the API does not name is a JSON 404.
    # (?s:.*) and \Z: a path with a line break in it is the API's too.
    re_path(r"^api(?:/(?P<rest>(?s:.*)))?\Z", api_not_found, name="api-not-found"),
    # Clients that ask without reading the pages' <link rel="icon">.
    path("favicon.ico", lambda request: HttpResponsePermanentRedirect(static("favicon.svg"))),
    # /healthz and /readyz (health/), /metrics (metrics/, off without METRICS_TOKEN).
    path("", include("health.urls")),
    path("", include("metrics.urls")),
    # POST /i18n/setlang/: the language switcher's form (Django's set_language).
    path("i18n/", include("django.conf.urls.i18n")),
    # POST /theme/: the theme switcher's form (pages/themes.py).
    path("theme/", set_theme, name="set-theme"),
    path("", include("collect.urls")),
    # The second factor's pages (/login/code/, /account/second-factor/).
    path("", include("signin.urls")),
    # Sign-in through an OpenID Connect provider (a 404 while OIDC_ISSUER is unset).
    path("signin/oidc/", include("signin.oidc.urls")),
    path("", include("web.urls")),
]
