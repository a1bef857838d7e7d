"""Who the provider says the user is (the claims named in the settings), and
the roles their groups give here."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext_lazy as _

from signin.oidc.refusals import AccountRefused

# Django's User.username is at most 150 characters.
USERNAME_MAX = 150


@dataclass(frozen=True)
class Identity:
    username: str
    email: str
    groups: frozenset[str]


def identity_from(claims: Mapping) -> Identity:
    claim = settings.OIDC_USERNAME_CLAIM
    username = claims.get(claim)
    if not isinstance(username, str) or not username.strip():
        raise AccountRefused(
            _("The sign-in service did not say who you are."), detail=f"no {claim!r} claim in {sorted(claims)}"
        )
    username = username.strip()
    if len(username) > USERNAME_MAX:
        raise AccountRefused(
            _("The name the sign-in service gave you is too long for an account here."),
            detail=f"{claim!r} is {len(username)} characters",
        )
    email = claims.get(settings.OIDC_EMAIL_CLAIM)
    return Identity(
        username=username,
        email=email.strip() if isinstance(email, str) else "",
        groups=frozenset(groups_in(claims.get(settings.OIDC_GROUPS_CLAIM))),
    )


def groups_in(value) -> Iterable[str]:
    """A groups claim as providers send it: a list of names, or one name alone."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [group for group in value if isinstance(group, str)]
    return []


def roles_for(groups: frozenset[str]) -> dict[str, bool]:
    """The role flags these groups set; a flag no group setting names is left out (left as it is)."""
    admin, staff = set(settings.OIDC_ADMIN_GROUPS), set(settings.OIDC_STAFF_GROUPS)
    roles = {}
    if admin:
        roles["is_superuser"] = bool(groups & admin)
    if admin or staff:
        roles["is_staff"] = bool(groups & (admin | staff))
    return roles
