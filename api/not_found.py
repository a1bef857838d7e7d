"""What a JSON client gets for a URL under /api/ that names no endpoint: a
JSON 404 in the API's error shape ({"detail": ...}), never Django's HTML page.

A URL that only lacks its trailing slash is sent on with a 301 when the
request is safe (GET, HEAD) as Django does elsewhere; any other method would
lose its body on the redirect (`curl -L` turns a POST into a GET that lists
shares and looks like success), so it gets the 404 with the right URL named.
"""

from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt


def _real_endpoint(path: str) -> bool:
    try:
        return resolve(path).url_name != "api-not-found"
    except Resolver404:
        return False


@csrf_exempt  # it changes nothing; an unsafe method would get the HTML CSRF page instead
def api_not_found(request, rest: str = ""):
    with_slash = request.path + "/"
    if not request.path.endswith("/") and _real_endpoint(with_slash):
        if request.method in ("GET", "HEAD"):
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(with_slash + (f"?{query}" if query else ""))
        detail = f"No such API endpoint: {request.path}. Did you mean {with_slash} (with the trailing slash)?"
    else:
        detail = f"No such API endpoint: {request.path}. The endpoints are listed at /api/docs/."
    return JsonResponse({"detail": detail}, status=404)
