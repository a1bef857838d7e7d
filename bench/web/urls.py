"""The project's URLs plus /bench/floor, for the web benchmark only.

Only bench/web/settings.py names this module. The floor view answers "ok"
without touching the database: what a request costs in gunicorn, WSGI and
the middleware stack alone, the yardstick for every view of ours.
"""

from django.http import HttpResponse
from django.urls import path

from microcloud.urls import urlpatterns as project_urlpatterns

FLOOR_PATH = "bench/floor"


def floor(request):
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [path(FLOOR_PATH, floor, name="bench-floor"), *project_urlpatterns]
