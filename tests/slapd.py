"""A real OpenLDAP server for the tests: Debian's slapd with a throw-away
directory (its own slapd.conf, database and port under a temporary
folder), started in the foreground and stopped after. Without slapd the
tests skip with a message, except with CI=true, where they fail: .ci/run
installs it."""

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import free_port, wait_for_port

SLAPD = os.environ.get("SLAPD_PATH", "/usr/sbin/slapd")
SUFFIX = "dc=example,dc=org"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD = "directory-admin-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"

CONFIG = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
pidfile {folder}/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
{tls}
database mdb
maxsize 10485760
suffix "{suffix}"
rootdn "{root_dn}"
rootpw {root_password}
directory {folder}/data
{security}
"""


def require_slapd() -> None:
    if os.access(SLAPD, os.X_OK):
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"no slapd at {SLAPD} and CI=true requires it (Debian's slapd)")
    pytest.skip(f"no slapd at {SLAPD}: apt-get install slapd to run the directory tests")


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (it is its own CA): (cert, key)."""
    cert, key = folder / "server.pem", folder / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@contextmanager
def slapd(folder: Path, *, tls: bool = False):
    """Run slapd on a free loopback port; yield (its ldap:// URI, the CA file or None).

    With `tls`, the server offers StartTLS and refuses any operation but the
    StartTLS itself on a connection without it (security tls=1)."""
    require_slapd()
    (folder / "data").mkdir(parents=True)
    ca = None
    tls_lines = security = ""
    if tls:
        ca, key = make_certificate(folder)
        tls_lines = f"TLSCertificateFile {ca}\nTLSCertificateKeyFile {key}"
        security = "security tls=1"
    config = folder / "slapd.conf"
    config.write_text(
        CONFIG.format(
            folder=folder, tls=tls_lines, suffix=SUFFIX, root_dn=ROOT_DN, root_password=ROOT_PASSWORD, security=security
        )
    )
    port = free_port()
    uri = f"ldap://127.0.0.1:{port}"
    log = (folder / "slapd.log").open("w")
    process = subprocess.Popen([SLAPD, "-f", str(config), "-h", f"{uri}/", "-d", "0"], stdout=log, stderr=log)
    try:
        wait_for_port(port, 15, process)
        yield uri, ca
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(folder / "data", ignore_errors=True)


class Directory:
    """The directory's entries, written as its administrator would."""

    def __init__(self, uri: str, ca: str | None = None):
        import ldap

        self.ldap = ldap
        self.connection = ldap.initialize(uri)
        if ca:
            self.connection.set_option(ldap.OPT_X_TLS_CACERTFILE, str(ca))
            self.connection.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
            self.connection.start_tls_s()
        self.connection.simple_bind_s(ROOT_DN, ROOT_PASSWORD)
        self.add(SUFFIX, objectClass=["dcObject", "organization"], dc="example", o="Example")
        self.add(PEOPLE, objectClass="organizationalUnit", ou="people")
        self.add(GROUPS, objectClass="organizationalUnit", ou="groups")

    def add(self, dn: str, **attributes) -> None:
        entry = [
            (name, [v.encode() for v in ([value] if isinstance(value, str) else value)])
            for name, value in attributes.items()
        ]
        self.connection.add_s(dn, entry)

    def add_person(self, uid: str, password: str, **extra) -> str:
        dn = f"uid={uid},{PEOPLE}"
        self.add(
            dn, objectClass="inetOrgPerson", uid=uid, cn=uid.title(), sn=uid.title(), givenName=uid.title(),
            mail=f"{uid}@example.org", userPassword=password, **extra,
        )  # fmt: skip
        return dn

    def add_group(self, name: str, *members: str) -> str:
        dn = f"cn={name},{GROUPS}"
        # groupOfNames needs a member: the administrator stands in for an empty group.
        self.add(dn, objectClass="groupOfNames", cn=name, member=list(members) or [ROOT_DN])
        return dn

    def set(self, dn: str, attribute: str, *values: str) -> None:
        self.connection.modify_s(dn, [(self.ldap.MOD_REPLACE, attribute, [v.encode() for v in values])])

    def close(self) -> None:
        self.connection.unbind_s()
