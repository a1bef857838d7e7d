from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from health.checks import readiness


@require_safe
@never_cache
def healthz(request):
    return JsonResponse({"status": "ok"})


@require_safe
@never_cache
def readyz(request):
    answer = readiness.answer()
    return JsonResponse(answer, status=200 if answer["status"] == "ready" else 503)
