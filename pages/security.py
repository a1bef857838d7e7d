"""Headers every owner page carries.

The pages load only their own static files, post only to this origin, and
talk to the server only for uploads and the live dashboard (connect-src).
They show private links, so they are never cached or framed.
"""

from django.utils.cache import add_never_cache_headers

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def with_page_headers(response):
    response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
    add_never_cache_headers(response)
    return response


class PageHeadersMixin:
    """For class-based views: the headers above on every answer."""

    def dispatch(self, request, *args, **kwargs):
        return with_page_headers(super().dispatch(request, *args, **kwargs))
