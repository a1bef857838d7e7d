"""The code exchanged for tokens and the ID token checked in full:
mozilla-django-oidc's backend, with its endpoints from the discovery
document and the checks it leaves out (audience, issuer, expiry required)
added, each failure a refusal of its own."""

import hmac

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.utils.translation import gettext_lazy as _
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from signin.oidc import discovery
from signin.oidc.accounts import account_for
from signin.oidc.claims import identity_from
from signin.oidc.config import library_setting
from signin.oidc.refusals import BadCallback, ProviderUnavailable, TokenRefused

# Seconds of clock difference with the provider allowed on exp and iat.
LEEWAY = 60

UNREADABLE = _("The sign-in service's answer could not be read.")
SIGNATURE = _("The sign-in service's answer is not signed by its keys.")
AUDIENCE = _("The sign-in service's answer was made for another application.")
ISSUER = _("The sign-in service's answer comes from another issuer.")
EXPIRED = _("The sign-in service's answer has expired. Start again.")
NONCE = _("The sign-in service's answer belongs to another sign-in. Start again.")
SUBJECT = _("The sign-in service's answers disagree about who you are.")


class OIDCBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(library_setting)
    # The library's skips the is_active check: Django's refuses a disabled
    # user's session at its next request.
    get_user = ModelBackend.get_user

    def __init__(self, *args, **kwargs):
        # The library's reads the endpoints from settings; ours come from the
        # discovery document, at sign-in.
        self.UserModel = get_user_model()

    def authenticate(self, request, **credentials):
        # Nothing signs in through authenticate(): a password form's POST
        # with ?code= in its URL must never reach the provider.
        return None

    def sign_in(self, request, *, nonce: str, code_verifier: str | None):
        """Exchange the callback's code, check the ID token, and return the account it names."""
        found = discovery.document()
        self.OIDC_OP_TOKEN_ENDPOINT = found["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = found.get("userinfo_endpoint")
        self.OIDC_OP_JWKS_ENDPOINT = found["jwks_uri"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        try:
            user = super().authenticate(request, nonce=nonce, code_verifier=code_verifier)
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            if status is not None and 400 <= status < 500:
                raise BadCallback(
                    _("The sign-in service would not finish this sign-in. Start again."), detail=str(exc)
                ) from None
            raise ProviderUnavailable(discovery.UNREACHABLE, detail=str(exc)) from None
        except (requests.RequestException, ValueError) as exc:
            raise ProviderUnavailable(discovery.UNREACHABLE, detail=str(exc)) from None
        if user is None:
            raise TokenRefused(UNREADABLE, detail="the token answer had no ID token")
        return user

    def verify_token(self, token, **kwargs):
        nonce = kwargs.get("nonce")
        if not isinstance(token, str) or not token:
            raise TokenRefused(UNREADABLE, detail="no id_token in the token answer")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRefused(UNREADABLE, detail=str(exc)) from None
        try:
            key = self.retrieve_matching_jwk(token)
        except (SuspiciousOperation, KeyError, jwt.PyJWTError) as exc:
            raise TokenRefused(SIGNATURE, detail=f"no key for kid {header.get('kid')!r}: {exc}") from None
        try:
            payload = jwt.decode(
                token,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_ISSUER,
                leeway=LEEWAY,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidSignatureError as exc:
            raise TokenRefused(SIGNATURE, detail=str(exc)) from None
        except jwt.ExpiredSignatureError as exc:
            raise TokenRefused(EXPIRED, detail=str(exc)) from None
        except jwt.InvalidAudienceError as exc:
            raise TokenRefused(AUDIENCE, detail=str(exc)) from None
        except jwt.InvalidIssuerError as exc:
            raise TokenRefused(ISSUER, detail=str(exc)) from None
        except jwt.PyJWTError as exc:
            raise TokenRefused(UNREADABLE, detail=str(exc)) from None
        # Core 1.0, 3.1.3.7: with several audiences, azp must be this client.
        audiences = payload["aud"] if isinstance(payload["aud"], list) else [payload["aud"]]
        if len(audiences) > 1 and payload.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise TokenRefused(AUDIENCE, detail=f"azp {payload.get('azp')!r} with audiences {audiences}")
        token_nonce = payload.get("nonce")
        if not (isinstance(nonce, str) and isinstance(token_nonce, str) and hmac.compare_digest(nonce, token_nonce)):
            raise TokenRefused(NONCE, detail="the ID token's nonce is not this sign-in's")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        """The ID token's claims, with the userinfo endpoint's over them when there is one."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT and access_token:
            info = super().get_userinfo(access_token, id_token, payload)
            if not isinstance(info, dict) or info.get("sub") != payload["sub"]:
                # Core 1.0, 5.3.4: a userinfo answer for another subject is not used.
                raise TokenRefused(SUBJECT, detail="userinfo's sub is not the ID token's")
            claims.update(info)
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        return account_for(identity_from(self.get_userinfo(access_token, id_token, payload)))
