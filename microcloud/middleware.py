"""Refuse a request body over the upload limit before anything reads it;
answer a file store out of reach with a 503, on every page.

DRF's CSRF check for session users reads request.POST, which spools a whole
multipart body to disk first: the view's own size check would come after a
gigabyte had been read. Here the declared Content-Length decides, first.
"""

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils.translation import gettext as _

from sharing.models.files import too_large_message
from storage.errors import StorageUnavailable

# Room for the multipart boundaries and part headers around the file itself.
MULTIPART_OVERHEAD_BYTES = 64 * 1024


class UploadLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        declared = request.META.get("CONTENT_LENGTH") or ""
        limit = settings.MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD_BYTES
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            return self.refuse(request)
        return self.get_response(request)

    def refuse(self, request) -> HttpResponse:
        if request.path.startswith("/api/"):
            response = JsonResponse({"detail": too_large_message()}, status=413)
        else:
            response = HttpResponse(f"{too_large_message()}\n", status=413, content_type="text/plain; charset=utf-8")
        # The body was not read: the connection cannot carry another request.
        response["Connection"] = "close"
        return response


class StorageUnavailableMiddleware:
    """A page that needed the file store while it was out of reach (a
    bucket's endpoint down) is a 503 with Retry-After, never a 500. The API
    and public links say so in their own shapes before this is reached."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, StorageUnavailable):
            return None
        text = _("The file store cannot be reached just now; try again in a moment.") + "\n"
        response = HttpResponse(text, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "1"
        return response
