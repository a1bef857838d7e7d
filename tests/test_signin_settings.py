"""microcloud/signin_local_settings.py: a typo stops start-up naming the variable."""

import runpy
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

MODULE = Path(__file__).resolve().parent.parent / "microcloud" / "signin_local_settings.py"


def read(monkeypatch, **env: str) -> dict:
    names = ("DISABLED_USERS_LINKS", "TRUSTED_PROXY_HEADER", "TRUSTED_PROXY_ADDRESSES", "TOTP_REQUIRED_FOR_STAFF")
    for name in (*names, "LDAP_SERVER_URI", "LDAP_USER_SEARCH_BASE", "LDAP_USER_FILTER", "LDAP_STAFF_GROUPS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(MODULE))


def test_the_defaults(monkeypatch):
    values = read(monkeypatch)
    assert values["DISABLED_USERS_LINKS"] == "keep"
    assert values["TRUSTED_PROXY_HEADER"] == ""
    assert values["TOTP_REQUIRED_FOR_STAFF"] is False


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DISABLED_USERS_LINKS": "delete"}, "DISABLED_USERS_LINKS"),
        ({"TRUSTED_PROXY_HEADER": "Remote-User"}, "TRUSTED_PROXY_ADDRESSES"),
        ({"TRUSTED_PROXY_HEADER": "Remote-User", "TRUSTED_PROXY_ADDRESSES": "10.0.0.0/33"}, "10.0.0.0/33"),
        ({"TOTP_REQUIRED_FOR_STAFF": "maybe"}, "TOTP_REQUIRED_FOR_STAFF"),
        ({"LDAP_SERVER_URI": "ldap.example.org", "LDAP_USER_SEARCH_BASE": "dc=x"}, "LDAP_SERVER_URI"),
        ({"LDAP_SERVER_URI": "ldap://ldap.example.org"}, "LDAP_USER_SEARCH_BASE"),
        ({"LDAP_USER_FILTER": "(uid=someone)"}, "LDAP_USER_FILTER"),
        ({"LDAP_STAFF_GROUPS": "cn=staff,dc=x"}, "LDAP_GROUP_SEARCH_BASE"),
        ({"LDAP_START_TLS": "perhaps"}, "LDAP_START_TLS"),
    ],
)
def test_a_bad_value_stops_start_up_naming_it(monkeypatch, env, named):
    with pytest.raises(ImproperlyConfigured, match=named):
        read(monkeypatch, **env)


def test_group_dns_are_separated_by_semicolons(monkeypatch):
    values = read(
        monkeypatch,
        LDAP_GROUP_SEARCH_BASE="ou=groups,dc=x",
        LDAP_STAFF_GROUPS="cn=staff,ou=groups,dc=x; cn=ops,ou=groups,dc=x",
    )
    assert values["LDAP_STAFF_GROUPS"] == ["cn=staff,ou=groups,dc=x", "cn=ops,ou=groups,dc=x"]


def test_proxy_addresses_are_read_as_a_list(monkeypatch):
    values = read(monkeypatch, TRUSTED_PROXY_HEADER="Remote-User", TRUSTED_PROXY_ADDRESSES="127.0.0.1/32, ::1")
    assert values["TRUSTED_PROXY_ADDRESSES"] == ["127.0.0.1/32", "::1"]
