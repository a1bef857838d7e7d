"""Which language a request is answered in: Django's LocaleMiddleware (the
switcher's cookie, else Accept-Language, else LANGUAGE_CODE) for the pages,
with two exceptions.

The REST API answers in English whatever the client's Accept-Language: its
messages are read by programs and by the people who write them, and the
same request gets the same words from every deployment.

A download is the owner's file, in whatever language it was written: it
carries no Content-Language of ours, and its bytes do not vary with the
reader's Accept-Language, so a cache may keep one copy for every reader.
"""

from django.middleware.locale import LocaleMiddleware
from django.utils import translation

API_LANGUAGE = "en"


def is_api(request) -> bool:
    return request.path_info == "/api" or request.path_info.startswith("/api/")


class PageLanguageMiddleware(LocaleMiddleware):
    def process_request(self, request):
        if is_api(request):
            translation.activate(API_LANGUAGE)
            request.LANGUAGE_CODE = API_LANGUAGE
            return
        super().process_request(request)

    def process_response(self, request, response):
        if is_api(request) or response.has_header("Content-Disposition"):  # a file's bytes
            return response
        return super().process_response(request, response)
