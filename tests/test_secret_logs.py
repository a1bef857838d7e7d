"""No secret of a URL is written whole to a log: link tokens (`/s/`, `/r/`)
in what gunicorn and Django write for every kind of refusal, under a real
gunicorn with its access log on; webhook endpoints' keys (query string,
userinfo) in the webhook worker's lines."""

import logging
import os
import secrets
import socket
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from collect.models import UploadRequest
from microcloud.logfilters import redact, shorten
from sharing.models import Share
from tests.helpers import create_share, free_port, run_manage, start_web, stop, wait_for_port, wait_for_text
from tests.webhook_receiver import Receiver
from webhooks.models import WebhookEndpoint
from webhooks.worker import DeliveryWorker


def request(port: int, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"") -> int:
    """One raw HTTP/1.0 exchange; the answer's status."""
    lines = [f"{method} {path} HTTP/1.0", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


TUS = {"Tus-Resumable": "1.0.0"}


@pytest.fixture
def static_root(tmp_path) -> str:
    """The refusal pages link static files through the manifest, as deployed."""
    root = tmp_path / "static"
    done = run_manage(
        "collectstatic", "--noinput", "--verbosity", "0", STATIC_ROOT=str(root), SECRET_KEY=os.environ["SECRET_KEY"]
    )
    assert done.returncode == 0, done.stderr
    return str(root)


@pytest.mark.django_db(transaction=True)
def test_no_refusal_on_a_link_writes_its_whole_token_to_the_server_logs(
    tmp_path, alice, shared_file, media_root, static_root
):
    hour = timezone.now() + timedelta(hours=1)
    locked_share = Share.create_for(file=shared_file, expires_at=hour, password="open sesame")
    ended_share = create_share(shared_file, 60)
    ended_share.unshare()
    small_request = UploadRequest.create_for(owner=alice, expires_at=hour, max_bytes=10)
    locked_request = UploadRequest.create_for(owner=alice, expires_at=hour, password="open sesame")
    ended_request = UploadRequest.create_for(owner=alice, expires_at=hour)
    UploadRequest.objects.filter(pk=ended_request.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    unknown_share, unknown_request = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    port = free_port()
    log = tmp_path / "web.log"
    server = start_web(
        port, log, workers=1, threads=2, LINK_RATE_LIMIT="40", MEDIA_ROOT=str(media_root), STATIC_ROOT=static_root
    )
    seen = []
    try:
        wait_for_port(port, 30, server)
        # Upload requests: 404, 410, 403, 413, 409, then 429.
        seen.append(request(port, "GET", f"/r/{unknown_request}/"))
        seen.append(request(port, "GET", f"/r/{ended_request.token}/"))
        seen.append(request(port, "POST", f"/r/{locked_request.token}/uploads/", {**TUS, "Upload-Length": "5"}))
        seen.append(request(port, "POST", f"/r/{small_request.token}/uploads/", {**TUS, "Upload-Length": "100"}))
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            created = client.post(f"/r/{small_request.token}/uploads/", headers={**TUS, "Upload-Length": "5"})
            assert created.status_code == 201, created.text
            stream = {**TUS, "Upload-Offset": "3", "Content-Type": "application/offset+octet-stream"}
            seen.append(client.patch(created.headers["Location"], headers=stream, content=b"ab").status_code)
            page = f"/r/{locked_request.token}/"
            assert client.get(page).status_code == 200
            guess = {"csrfmiddlewaretoken": client.cookies["csrftoken"], "password": "wrong"}
            statuses = [client.post(page, data=guess).status_code for _ in range(11)]
            assert (statuses[0], statuses[-1]) == (403, 429), statuses
            seen.append(statuses[-1])
        # Links: 404, 403, 410, then past the rate limit 429.
        seen.append(request(port, "GET", f"/s/{unknown_share}"))
        seen.append(request(port, "GET", f"/s/{locked_share.token}"))
        seen.append(request(port, "GET", f"/s/{ended_share.token}"))
        for _ in range(200):
            if request(port, "GET", f"/s/{ended_share.token}/download") == 429:
                seen.append(429)
                break
        wait_for_text(log, f'/s/{shorten(ended_share.token)}/download HTTP/1.0" 429', 10, process=server)
    finally:
        stop(server)
    assert seen == [404, 410, 403, 413, 409, 429, 404, 403, 410, 429]
    text = log.read_text()
    tokens = [small_request.token, locked_request.token, ended_request.token, unknown_request]
    tokens += [locked_share.token, ended_share.token, unknown_share]
    for token in tokens:
        assert token not in text
        assert f"/{shorten(token)}" in text  # the lines are there, shortened
    # Both logs: gunicorn's access log and Django's request log.
    for line in (
        f'"POST /r/{shorten(small_request.token)}/uploads/ HTTP/1.0" 413',
        f"Request Entity Too Large: /r/{shorten(small_request.token)}/uploads/",
        f"Conflict: /r/{shorten(small_request.token)}/uploads/",
        f"Forbidden: /r/{shorten(locked_request.token)}/uploads/",
        f"Too Many Requests: /r/{shorten(locked_request.token)}/",
        f"Gone: /r/{shorten(ended_request.token)}/",
        f"Not Found: /s/{shorten(unknown_share)}",
        f"Too Many Requests: /s/{shorten(ended_share.token)}/download",
    ):
        assert line in text, line


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        ("GET /r/pSBAoluAEAu4Pa2ms9ud4w/uploads/x 409", "GET /r/pSBAol…/uploads/x 409"),
        ("GET /admin/login/?next=/r/pSBAoluAEAu4Pa2ms9ud4w/", "GET /admin/login/?next=/r/pSBAol…/"),
        ("GET /admin/login/?next=%2Fs%2FpSBAoluAEAu4Pa2ms9ud4w", "GET /admin/login/?next=%2Fs%2FpSBAol…"),
        ("to https://hooks.example.com/in?key=s3cr3t-v4lue failed", "to https://hooks.example.com/in?key=s3… failed"),
        ("to https://bot:hunter2hunter2@hooks.example.com/in failed", "to https://bot:hu…@hooks.example.com/in failed"),
        ("GET /api/shares/?status=active HTTP/1.1", None),  # not a secret: kept
        ("GET /static/web/app.js HTTP/1.1", None),
    ],
)
def test_redact_shortens_every_secret_of_a_url(line, logged):
    assert redact(line) == (logged or line)


def test_a_short_secret_is_never_shown_whole():
    assert shorten("abcd") == "ab…"
    assert shorten("pSBAoluAEAu4Pa2ms9ud4w") == "pSBAol…"


@pytest.mark.django_db
def test_a_failed_webhook_delivery_logs_its_endpoint_without_its_key(alice, shared_file, caplog, settings):
    settings.WEBHOOK_TIMEOUT = 2
    receiver = Receiver()
    receiver.answer = lambda n: 500
    try:
        key = secrets.token_urlsafe(16)
        url = f"{receiver.url}?key={key}"
        WebhookEndpoint.objects.create(owner=alice, url=url, events=["created"])
        create_share(shared_file, 3600)
        with caplog.at_level(logging.WARNING, logger="webhooks"):
            assert DeliveryWorker().run_once()
    finally:
        receiver.close()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "failed (attempt 1)" in logged
    assert key not in logged
