import hmac

from django.conf import settings
from django.http import Http404, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from metrics.collector import DatabaseCollector


def bearer_token(request) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@require_safe
@never_cache
def metrics(request):
    """The figures, for a scraper holding METRICS_TOKEN; for anyone else
    (and for everyone while no token is set) the page does not exist."""
    expected = settings.METRICS_TOKEN
    if not expected or not hmac.compare_digest(bearer_token(request).encode(), expected.encode()):
        raise Http404
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
