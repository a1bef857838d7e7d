"""The image, built from the repository's Dockerfile with podman and run as
a self-hoster runs it (marker `container`; `make test-fast` leaves these out).

- One container on SQLite with a volume: the API, the web app and the
  daemon; a share made through it expires on time and its link answers 410;
  `podman stop` (SIGTERM) ends it cleanly, with status 0, within the grace
  period; started again on the same volume nothing is lost; nothing inside
  runs as root and everything in the volume belongs to the image's user.
- Two web nodes (gunicorn, and granian by WEB_SERVER) and a daemon on the
  host's PostgreSQL: a web node's
  /readyz reports the daemon missing within its lease's ttl once it is
  killed, and ready again once it is back.

No registry is reachable here: the `debian:bookworm-slim` base is built
from Debian's packages (mmdebstrap, podman import) once, and the image is
built with --pull=never, once per test session. Podman 4.3 on this kind of
machine runs containers only with runc, the host's network and no default
ulimits (a containers.conf of our own). Without podman, mmdebstrap or runc
these tests skip, except under CI=true, where they fail (.ci/run installs
them).
"""

import http.client
import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from tests.helpers import REPO_ROOT, free_port, wait_until

# One test process builds and runs them, one at a time: two builds at once
# would each take both cores.
# The first test's set-up builds the image: minutes, not the suite's 300 s.
pytestmark = [pytest.mark.container, pytest.mark.xdist_group("container"), pytest.mark.timeout(1800)]

IMAGE = "localhost/microcloud:test"
BASE_IMAGE = "debian:bookworm-slim"
# pip in the build reaches PyPI only through this machine's CAs. Mounted
# over the image's own bundle, it made Debian's ca-certificates fail to
# install (its bundle is replaced by a rename, and a mount cannot be); as a
# local CA, update-ca-certificates adds it to the bundle it builds.
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
BUILD_CA = "/usr/local/share/ca-certificates/build-host.crt"
UID = 10001  # the Dockerfile's user
ADMIN = ("admin", "change-me-now-1")
PG_URL = os.environ.get("PG_TEST_URL", "postgres://postgres@127.0.0.1:5432/postgres")
LEASE_TTL = 5.0  # EXPIRY_LEASE_TTL's default


def required(tools: list[str]) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not missing:
        return
    message = f"{', '.join(missing)} not installed (apt-get install -y podman mmdebstrap runc)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{message}, and CI=true requires the container tests")
    pytest.skip(message)


class Podman:
    """podman as this machine runs it: runc, its own containers.conf."""

    def __init__(self, conf: Path):
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}

    def __call__(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["podman", "--runtime", "runc", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def run(self, name: str, *args: str, role: str = "all", **env: str) -> float:
        """Start container `name` in the background; return when (time.monotonic())."""
        options = [item for key, value in env.items() for item in ("-e", f"{key}={value}")]
        started = time.monotonic()
        self("run", "-d", "--name", name, "--network=host", *options, *args, IMAGE, role)
        return started

    def logs(self, name: str) -> str:
        done = self("logs", name, check=False)
        return done.stdout + done.stderr


@pytest.fixture(scope="session")
def podman(tmp_path_factory) -> Podman:
    if settings.DATABASES["default"]["ENGINE"] != "sqlite_writers":
        # Their databases are their own (a volume's SQLite, a new PostgreSQL
        # database): the pass on SQLite runs them, once.
        pytest.skip("run once, in the pass on SQLite")
    required(["podman", "mmdebstrap", "runc"])
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text('[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n')
    return Podman(conf)


@pytest.fixture(scope="session")
def image(podman, tmp_path_factory) -> dict:
    """The image, built once per session; its size and build time."""
    if podman("image", "exists", BASE_IMAGE, check=False).returncode != 0:
        work = tmp_path_factory.mktemp("base")
        tarball = work / "base.tar"
        subprocess.run(["mmdebstrap", "--variant=minbase", "bookworm", str(tarball)], check=True, timeout=900)
        podman("import", str(tarball), BASE_IMAGE, timeout=300)
    started = time.monotonic()
    podman(
        "build",
        "--pull=never",
        "--format",
        "docker",  # OCI images drop HEALTHCHECK
        "--network",
        "host",
        "-v",
        f"{CA_BUNDLE}:{BUILD_CA}:ro",
        "-t",
        IMAGE,
        str(REPO_ROOT),
        timeout=1500,
    )
    built = time.monotonic() - started
    size = int(podman("image", "inspect", "--format", "{{.Size}}", IMAGE).stdout.strip())
    return {"build_seconds": round(built, 1), "size_mb": round(size / 1e6, 1)}


@pytest.fixture
def containers(podman):
    """Names for this test's containers; each removed at the end."""
    names = []

    def name(role: str) -> str:
        names.append(f"microcloud-test-{role}-{uuid.uuid4().hex[:8]}")
        return names[-1]

    yield name
    for each in names:
        podman("rm", "-f", "-v", "-t", "2", each, check=False)  # -v: its anonymous /data too


@pytest.fixture
def volume(tmp_path) -> Path:
    """A host folder as the state volume, owned by the image's user (rootful podman)."""
    folder = tmp_path / "data"
    folder.mkdir(mode=0o700)
    os.chown(folder, UID, UID)
    return folder


def request(port: int, method: str, path: str, body=None, headers=None) -> tuple[int, dict, bytes]:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        client.request(method, path, body, headers or {})
        response = client.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        client.close()


def answers(port: int, path: str = "/healthz") -> int | None:
    try:
        return request(port, "GET", path)[0]
    except OSError:
        return None


def wait_for(port: int, path: str, status: int, timeout: float, *, podman=None, name=None) -> float:
    """Wait until `path` answers `status`; return when (time.monotonic()).
    Fail at once, with its logs, if container `name` has ended meanwhile."""
    looked = [time.monotonic()]

    def done() -> bool:
        if answers(port, path) == status:
            return True
        if podman is not None and time.monotonic() - looked[0] > 1.0:
            looked[0] = time.monotonic()
            running = podman("inspect", "--format", "{{.State.Running}}", name, check=False).stdout.strip()
            if running != "true":
                raise AssertionError(f"container {name} ended before {path} answered {status}:\n{podman.logs(name)}")
        return False

    if not wait_until(done, timeout=timeout, interval=0.05):
        logs = podman.logs(name) if podman else ""
        raise AssertionError(f"{path} on {port} did not answer {status} within {timeout} s:\n{logs}")
    return time.monotonic()


def api_token(port: int) -> str:
    body = f"username={ADMIN[0]}&password={ADMIN[1]}"
    status, _, content = request(
        port, "POST", "/api/auth/token/", body, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert status == 200, content
    return json.loads(content)["token"]


def upload(port: int, token: str, data: bytes) -> int:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="report.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "Authorization": f"Token {token}"}
    status, _, content = request(port, "POST", "/api/files/", body, headers)
    assert status == 201, content
    return json.loads(content)["id"]


def api(port: int, token: str, method: str, path: str, payload=None) -> dict:
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    status, _, content = request(port, method, path, json.dumps(payload) if payload is not None else None, headers)
    assert status < 300, (status, content)
    return json.loads(content)


def link_path(share: dict) -> str:
    return "/s/" + share["url"].split("/s/", 1)[1]


def processes_uids(podman: Podman, name: str) -> set[int]:
    # check=False: a process may end between the glob and its cat.
    status = podman("exec", name, "sh", "-c", "cat /proc/[0-9]*/status", check=False).stdout
    return {int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:")}


def test_one_container_on_sqlite_serves_expires_stops_and_keeps_its_state(podman, image, containers, volume, capsys):
    port = free_port()
    env = {"PORT": str(port), "DJANGO_SUPERUSER_USERNAME": ADMIN[0], "DJANGO_SUPERUSER_PASSWORD": ADMIN[1]}
    first = containers("all")
    started = podman.run(first, "-v", f"{volume}:/data", **env)
    answered = wait_for(port, "/healthz", 200, 180, podman=podman, name=first)
    wait_for(port, "/readyz", 200, 60, podman=podman, name=first)

    token = api_token(port)
    data = os.urandom(50_000)
    file_id = upload(port, token, data)
    share = api(port, token, "POST", "/api/shares/", {"file": file_id, "expires_in": 2})
    link = link_path(share)
    status, _, body = request(port, "GET", link)
    assert (status, body) == (200, data)
    # The web app and its static files (collected at build time, served by WhiteNoise).
    assert request(port, "GET", "/")[0] == 302
    status, _, page = request(port, "GET", "/login/")
    assert status == 200
    assert b"<form" in page
    assert request(port, "GET", "/static/favicon.svg")[0] == 200

    def ended() -> bool:
        return api(port, token, "GET", f"/api/shares/{share['id']}/")["status"] == "expired"

    assert wait_until(ended, timeout=30, interval=0.1), podman.logs(first)
    expired = api(port, token, "GET", f"/api/shares/{share['id']}/")
    assert expired["end_reason"] == "expired"
    assert expired["lateness_ms"] is not None
    assert expired["lateness_ms"] >= 0
    assert request(port, "GET", link)[0] == 410
    assert "expired 1 shares" in podman.logs(first)
    assert podman("healthcheck", "run", first, check=False).returncode == 0  # the image's HEALTHCHECK

    # Nothing runs as root; everything the service wrote is its user's.
    assert processes_uids(podman, first) == {UID}
    owners = {(path.relative_to(volume).as_posix(), path.stat().st_uid) for path in volume.rglob("*")}
    assert {"db.sqlite3", "secret_key"} <= {name for name, _ in owners}
    assert {uid for _, uid in owners} == {UID}, owners

    stop_started = time.monotonic()
    podman("stop", "-t", "10", first, timeout=60)
    stopped_in = time.monotonic() - stop_started
    state = podman("inspect", "--format", "{{.State.ExitCode}}", first).stdout.strip()
    assert state == "0", podman.logs(first)  # 137 would be SIGKILL after the grace period
    key = (volume / "secret_key").read_text()

    second = containers("again")
    podman.run(second, "-v", f"{volume}:/data", **env)
    wait_for(port, "/readyz", 200, 120, podman=podman, name=second)
    assert (volume / "secret_key").read_text() == key
    files = api(port, token, "GET", "/api/files/")  # the same token: the same database
    assert [f["id"] for f in files["results"]] == [file_id]
    assert api(port, token, "GET", f"/api/shares/{share['id']}/")["status"] == "expired"
    again = api(port, token, "POST", "/api/shares/", {"file": file_id, "expires_in": 600})
    assert request(port, "GET", link_path(again))[::2] == (200, data)
    assert "Admin user admin exists." in podman.logs(second)
    podman("stop", "-t", "10", second, timeout=60)

    with capsys.disabled():
        print(
            f"\n[figures] container: image {image['size_mb']} MB, built in {image['build_seconds']} s; "
            f"podman run to first answer {answered - started:.2f} s (fresh volume, migrations included); "
            f"lateness {expired['lateness_ms']} ms; podman stop took {stopped_in:.2f} s",
            flush=True,
        )


@pytest.fixture
def pg_database():
    """A new database on the host's PostgreSQL, dropped at the end."""
    name = f"test_container_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as error:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"PostgreSQL at {PG_URL} is unreachable: {error}")
        pytest.skip(f"PostgreSQL at {PG_URL} is unreachable")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield PG_URL.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def expiry_ok(port: int) -> bool | None:
    try:
        _status, _, body = request(port, "GET", "/readyz")
    except OSError:
        return None
    return json.loads(body)["checks"]["expiry"]["ok"]


def test_two_web_nodes_see_the_daemon_go_and_come_back(podman, image, containers, pg_database, tmp_path, capsys):
    files = tmp_path / "files"
    files.mkdir(mode=0o700)
    os.chown(files, UID, UID)
    common = {"DATABASE_URL": pg_database, "SECRET_KEY": "k" * 60, "WEB_WORKERS": "1", "WEB_THREADS": "2"}
    ports = [free_port(), free_port()]
    daemon = containers("expiry")
    webs = [containers(f"web{n}") for n in (1, 2)]
    mount = ["-v", f"{files}:/data/files"]
    # All three at once: they migrate the new database once, under the lock.
    podman.run(daemon, *mount, role="expiry", **common)
    # The second node under the other web server, chosen by its setting.
    servers = ("gunicorn", "granian")
    for web, port, server in zip(webs, ports, servers, strict=True):
        podman.run(web, *mount, role="serve", PORT=str(port), WEB_SERVER=server, **common)
    for web, port in zip(webs, ports, strict=True):
        wait_for(port, "/readyz", 200, 180, podman=podman, name=web)
    logs = [podman.logs(name) for name in (daemon, *webs)]
    assert sum("Applying sharing.0001" in log for log in logs) == 1, "\n---\n".join(logs)
    assert "Booting worker" in logs[1], logs[1]
    assert "Starting granian" in logs[2], logs[2]

    killed = time.monotonic()
    podman("kill", "--signal", "KILL", daemon)
    assert wait_until(lambda: expiry_ok(ports[0]) is False, timeout=LEASE_TTL + 10, interval=0.1)
    missing_after = time.monotonic() - killed
    assert expiry_ok(ports[1]) is False
    status, _, body = request(ports[0], "GET", "/readyz")
    assert status == 503
    assert json.loads(body)["status"] == "not ready"

    restarted = time.monotonic()
    podman("start", daemon)
    assert wait_until(lambda: expiry_ok(ports[0]) is True, timeout=120, interval=0.1), podman.logs(daemon)
    back_after = time.monotonic() - restarted
    assert all(expiry_ok(port) for port in ports)

    stopped = time.monotonic()
    podman("stop", "-t", "10", daemon, timeout=60)
    assert wait_until(lambda: expiry_ok(ports[0]) is False, timeout=LEASE_TTL + 10, interval=0.1)
    gone_after_stop = time.monotonic() - stopped
    assert podman("inspect", "--format", "{{.State.ExitCode}}", daemon).stdout.strip() == "0"
    with capsys.disabled():
        print(
            f"\n[figures] container nodes: readyz saw the daemon missing {missing_after:.2f} s after SIGKILL "
            f"(lease ttl {LEASE_TTL:g} s), {gone_after_stop:.2f} s after a clean stop; ready again "
            f"{back_after:.2f} s after its start",
            flush=True,
        )
