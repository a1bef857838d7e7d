"""A trusted proxy header: a forward-auth proxy (Authelia, authentik's
outpost, oauth2-proxy) in front of the site signs people in and names them
in a header (TRUSTED_PROXY_HEADER, e.g. Remote-User).

Off unless TRUSTED_PROXY_HEADER is set. The header is believed only from a
peer whose address (REMOTE_ADDR: the connection's own end, never
X-Forwarded-For, which any client writes) is in TRUSTED_PROXY_ADDRESSES;
from anywhere else it is ignored, as if it were not there. The API never
reads it: a script there shows a token (the pages' session, once made,
is a session like any other).

Django's RemoteUserMiddleware and RemoteUserBackend do the rest: the user
is created on first sight, an inactive one is refused (ModelBackend's
rule), and a session made from the header ends when the proxy stops
sending it."""

import ipaddress
import logging

from django.conf import settings
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware

logger = logging.getLogger("signin")

API_PREFIX = "/api/"  # microcloud/urls.py: every API route is under it


def from_trusted_proxy(request) -> bool:
    """Did `request` come straight from one of TRUSTED_PROXY_ADDRESSES?"""
    if not settings.TRUSTED_PROXY_HEADER or request is None:
        return False
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:  # a unix socket's peer has no address: nothing to trust
        return False
    if peer.version == 6 and peer.ipv4_mapped is not None:
        peer = peer.ipv4_mapped
    return any(peer in ipaddress.ip_network(cidr, strict=False) for cidr in settings.TRUSTED_PROXY_ADDRESSES)


def is_api(request) -> bool:
    path = request.path_info
    return path == API_PREFIX.rstrip("/") or path.startswith(API_PREFIX)


class TrustedProxyMiddleware(RemoteUserMiddleware):
    """After AuthenticationMiddleware. Synchronous only: the site is served by
    gunicorn's sync workers, and the parent's async path reads another key."""

    async_capable = False

    @property
    def header(self) -> str:
        return "HTTP_" + settings.TRUSTED_PROXY_HEADER.upper().replace("-", "_")

    def process_request(self, request):
        if is_api(request) or not from_trusted_proxy(request):
            return
        super().process_request(request)


class TrustedProxyBackend(RemoteUserBackend):
    """RemoteUserBackend that checks the address itself too, so no other
    caller of authenticate(remote_user=...) can sign anyone in from elsewhere."""

    def authenticate(self, request, remote_user):
        if not from_trusted_proxy(request) or is_api(request):
            return None
        return super().authenticate(request, remote_user)

    def clean_username(self, username: str) -> str:
        return username.strip()
