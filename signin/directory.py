"""Sign-in against an LDAP directory or Active Directory (django-auth-ldap
over python-ldap), on when LDAP_SERVER_URI is set.

The site binds as LDAP_BIND_DN, finds the user with LDAP_USER_FILTER under
LDAP_USER_SEARCH_BASE, then binds as that user with the password typed.
The user's row is made on the first sign-in and updated at every one: the
name and email from the entry, staff and superuser from membership of
LDAP_STAFF_GROUPS and LDAP_SUPERUSER_GROUPS (groupOfNames under
LDAP_GROUP_SEARCH_BASE), so a group change changes the role at the next
sign-in. A user the filter no longer finds (disabled, deleted) cannot sign
in; a user disabled in the site (is_active) cannot either, whatever the
directory says, and their open sessions end: ModelBackend's rule, which
LDAPBackend does not keep by itself (its authenticate and get_user take
inactive users), so it is added here."""

import ldap
from django.conf import settings
from django_auth_ldap.backend import LDAPBackend, LDAPSettings
from django_auth_ldap.config import GroupOfNamesType, LDAPGroupQuery, LDAPSearch


def _any_of(groups: list[str]):
    query = None
    for dn in groups:
        query = LDAPGroupQuery(dn) if query is None else query | LDAPGroupQuery(dn)
    return query


def directory_settings() -> dict:
    """django-auth-ldap's settings, from ours."""
    options = {ldap.OPT_REFERRALS: 0, ldap.OPT_NETWORK_TIMEOUT: 10}
    if settings.LDAP_CA_FILE:
        options[ldap.OPT_X_TLS_CACERTFILE] = settings.LDAP_CA_FILE
    if settings.LDAP_START_TLS or settings.LDAP_SERVER_URI.startswith("ldaps://"):
        options[ldap.OPT_X_TLS_REQUIRE_CERT] = ldap.OPT_X_TLS_DEMAND
        options[ldap.OPT_X_TLS_NEWCTX] = 0  # last: makes the TLS options above take effect
    flags = {}
    if settings.LDAP_STAFF_GROUPS or settings.LDAP_SUPERUSER_GROUPS:
        flags["is_staff"] = _any_of(settings.LDAP_STAFF_GROUPS + settings.LDAP_SUPERUSER_GROUPS)
    if settings.LDAP_SUPERUSER_GROUPS:
        flags["is_superuser"] = _any_of(settings.LDAP_SUPERUSER_GROUPS)
    values = {
        "SERVER_URI": settings.LDAP_SERVER_URI,
        "START_TLS": settings.LDAP_START_TLS,
        "CONNECTION_OPTIONS": options,
        "BIND_DN": settings.LDAP_BIND_DN,
        "BIND_PASSWORD": settings.LDAP_BIND_PASSWORD,
        "USER_SEARCH": LDAPSearch(settings.LDAP_USER_SEARCH_BASE, ldap.SCOPE_SUBTREE, settings.LDAP_USER_FILTER),
        "USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "USER_FLAGS_BY_GROUP": flags,
        "ALWAYS_UPDATE_USER": True,
    }
    if settings.LDAP_GROUP_SEARCH_BASE:
        values["GROUP_SEARCH"] = LDAPSearch(
            settings.LDAP_GROUP_SEARCH_BASE, ldap.SCOPE_SUBTREE, "(objectClass=groupOfNames)"
        )
        values["GROUP_TYPE"] = GroupOfNamesType()
    return values


class DirectoryBackend(LDAPBackend):
    # No AUTH_LDAP_* setting is read: every value comes from directory_settings().
    settings_prefix = "SIGNIN_DIRECTORY_UNUSED_"

    @property
    def settings(self):
        if self._settings is None:
            self._settings = LDAPSettings(self.settings_prefix, directory_settings())
        return self._settings

    @settings.setter
    def settings(self, value):
        self._settings = value

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not settings.LDAP_SERVER_URI:
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        return user if user is not None and user.is_active else None

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
