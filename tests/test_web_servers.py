"""The web server by setting: gunicorn, unless WEB_SERVER says granian
(deploy/web_servers.py), started alike by `make run`, the container and
the benchmarks."""

import http.client
import signal
import subprocess
import sys
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from deploy.web_servers import APP, WebServer, cores
from sharing.models import Share
from tests.helpers import REPO_ROOT, free_port, start, stop, subprocess_env, wait_for_port, wait_until


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_gunicorn_is_the_default_its_app_preloaded_and_two_workers_a_core():
    command = WebServer.from_environ({}).command()
    assert Path(command[0]).name == "gunicorn"
    assert {"--preload", "--no-control-socket", "python:microcloud.gunicorn_conf", APP} <= set(command)
    assert option(command, "--bind") == "127.0.0.1:8000"
    assert option(command, "--workers") == str(2 * cores())
    assert option(command, "--threads") == "4"
    assert "--access-logfile" not in command


def test_web_server_chooses_granian_with_one_worker_a_core():
    environ = {"WEB_SERVER": "granian", "HOST": "0.0.0.0", "PORT": "8123", "WEB_THREADS": "2", "WEB_WORKERS": ""}
    command = WebServer.from_environ(environ, access_log=True).command()
    assert Path(command[0]).name == "granian"
    assert command[-1] == APP
    assert option(command, "--interface") == "wsgi"
    assert (option(command, "--host"), option(command, "--port")) == ("0.0.0.0", "8123")
    assert option(command, "--workers") == str(cores())
    assert option(command, "--blocking-threads") == "2"
    # Its access log would write the links' tokens whole.
    assert not any("access-log" in part for part in command)


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("WEB_SERVER", "nginx", "WEB_SERVER must be one of gunicorn, granian, got 'nginx'"),
        ("WEB_WORKERS", "0", "WEB_WORKERS must be a whole number of at least 1, got '0'"),
        ("PORT", "eighty", "PORT must be a whole number of at least 1, got 'eighty'"),
    ],
)
def test_a_setting_that_cannot_be_used_is_named_and_nothing_starts(variable, value, said):
    done = subprocess.run(
        [sys.executable, "-m", "deploy.web_servers"],
        cwd=REPO_ROOT,
        env=subprocess_env(**{variable: value}),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"microcloud: {said}\n")


def test_a_server_that_is_not_installed_is_named_with_how_to_install_it():
    # The interpreter the virtualenv was made from: granian is installed only in the venv.
    base = Path(sys._base_executable)
    if base.parent == Path(sys.executable).parent or base.with_name("granian").exists():
        pytest.skip("needs an interpreter without granian beside it")
    done = subprocess.run(
        [str(base), "-m", "deploy.web_servers"],
        cwd=REPO_ROOT,
        env=subprocess_env(WEB_SERVER="granian"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr == f"microcloud: granian is not installed: {base} -m pip install -r requirements-granian.txt\n"


def test_help_says_what_it_reads():
    done = subprocess.run(
        [sys.executable, "-m", "deploy.web_servers", "--help"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0
    assert all(name in done.stdout for name in ("WEB_SERVER", "HOST", "PORT", "WEB_WORKERS", "WEB_THREADS"))


def fetch(port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_under_granian_links_keep_their_rules_and_a_stop_is_graceful(tmp_path, settings, alice, make_file, client):
    data = bytes(range(256)) * 4
    hot = Share.create_for(file=make_file(alice, name="hot.bin", data=data), expires_at=timezone.now() + timedelta(1))
    once = Share.create_for(
        file=make_file(alice, name="once.bin", data=data), expires_at=timezone.now() + timedelta(1), max_downloads=1
    )
    due = timezone.now() + timedelta(seconds=2)
    soon = Share.create_for(file=make_file(alice, name="soon.bin", data=data), expires_at=due)
    port, log = free_port(), tmp_path / "granian.log"
    server = start(
        WebServer("granian", port=port, workers=2, threads=4, graceful_timeout=5).command(),
        output=log,
        DEBUG="false",
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        RATELIMIT_SQLITE_PATH=str(tmp_path / "ratelimit.sqlite3"),
        LINK_RATE_LIMIT="1000000000",
    )
    try:
        wait_for_port(port, 60, server)
        status, headers, body = fetch(port, reverse("public-share", args=[hot.token]))
        assert (status, body) == (200, data)
        # The same security headers as under the test client (and gunicorn): the app sets them.
        expected = client.get(reverse("public-share", args=[hot.token])).headers
        names = ("content-security-policy", "x-content-type-options", "referrer-policy", "x-frame-options")
        security = {name: expected[name] for name in names if name in expected}
        assert len(security) >= 2, expected
        assert {name: headers.get(name) for name in security} == security

        results = [None] * 10
        barrier = threading.Barrier(len(results))

        def race(n: int) -> None:
            barrier.wait(30)
            results[n] = fetch(port, reverse("public-share", args=[once.token]))[::2]

        racers = [threading.Thread(target=race, args=(n,)) for n in range(len(results))]
        for thread in racers:
            thread.start()
        for thread in racers:
            thread.join(60)
        assert Counter(status for status, _ in results) == {200: 1, 410: 9}
        assert [body for status, body in results if status == 200] == [data]
        once.refresh_from_db()
        assert once.download_count == 1

        # No expiry daemon runs here: the link is refused from its deadline all the same.
        assert wait_until(lambda: timezone.now() >= due, 10)
        assert fetch(port, reverse("public-share", args=[soon.token]))[0] == 410
    finally:
        server.send_signal(signal.SIGTERM)
        status = server.wait(30)
        stop(server)
    text = log.read_text()
    assert status == 0, text[-2000:]
    assert "Granian shutdown completed" in text
    for share in (hot, once, soon):
        assert share.token not in text
