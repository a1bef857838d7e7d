"""Hardening: regression tests for items 5 to 9 of the review (items 1 to 4
have files of their own: test_expiry_hostile_notices, test_access_time_locks,
test_login_limits, test_deploy_check)."""

import logging
import os
import socket
import stat
import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from microcloud.logfilters import redact
from sharing.models import Share, StoredFile
from tests.helpers import create_share, free_port, start_manage, start_web, stop, wait_for_port, wait_for_text

pytestmark = pytest.mark.django_db


# --- 5. the upload limit holds before anything reads the body -------------------


def test_a_session_upload_over_the_limit_is_refused_with_413(settings, alice):
    settings.MAX_UPLOAD_BYTES = 1000
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    client.get("/admin/login/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    big = SimpleUploadedFile("big.bin", b"x" * 200_000)
    response = client.post("/api/files/", {"file": big}, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 413
    assert "1000 bytes" in response.json()["detail"]
    assert not StoredFile.objects.exists()
    # Refused unread: the CSRF check (which reads request.POST) never ran.
    assert not response.wsgi_request.environ["wsgi.input"].read_started


@pytest.mark.django_db(transaction=True)
def test_the_server_answers_413_before_the_body_arrives(tmp_path, alice):
    """Over a real socket, with a session and CSRF as a browser sends them:
    the answer comes while most of the declared body was never sent."""
    session = SessionStore()
    session["_auth_user_id"] = str(alice.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = alice.get_session_auth_hash()
    session.create()
    csrf = "a" * 32
    port = free_port()
    server = start_web(port, tmp_path / "web.log", workers=1, threads=2, MAX_UPLOAD_BYTES="1000")
    try:
        wait_for_port(port, 30, server)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            head = (
                "POST /api/files/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 52428800\r\n"
                f"Cookie: sessionid={session.session_key}; csrftoken={csrf}\r\n"
                f"X-CSRFToken: {csrf}\r\nReferer: http://127.0.0.1/\r\n\r\n"
            )
            sock.sendall(head.encode() + b"--b\r\n" + b"x" * 10_000)  # 10 KB of the 50 MB declared
            started = time.monotonic()
            answer = sock.recv(4096).decode(errors="replace")
            waited = time.monotonic() - started
    finally:
        stop(server)
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert waited < 10  # answered, not waiting for 50 MB that never come


# --- 6. the client's Content-Type is checked; downloads are sandboxed ------------


def upload(client, name, data, content_type):
    return client.post("/api/files/", {"file": SimpleUploadedFile(name, data, content_type=content_type)})


@pytest.mark.parametrize(
    "content_type",
    ["text/plain" + "x" * 600, "text/pl\x01ain", "text", "text/", "\u00fc/x"],
    ids=["600 chars", "control char", "no subtype", "empty subtype", "non-ascii"],
)
def test_a_malformed_content_type_is_a_400_naming_the_file_field(alice_client, content_type):
    response = upload(alice_client, "a.txt", b"hi", content_type)
    assert response.status_code == 400
    assert "file" in response.json()
    assert "not a valid media type" in response.json()["file"][0]
    assert not StoredFile.objects.exists()


def test_a_well_formed_type_is_stored_normalized(alice_client):
    # Django's multipart parser keeps a part's parameters apart (charset).
    response = upload(alice_client, "a.txt", b"hi", "Text/Plain; charset=utf-8")
    assert response.status_code == 201
    assert response.json()["content_type"] == "text/plain"


@pytest.mark.parametrize(
    ("raw", "stored"),
    [("TEXT/HTML; charset=UTF-8", "text/html; charset=UTF-8"), ("", "application/octet-stream")],
)
def test_clean_content_type_keeps_parameters_and_fills_in_a_default(raw, stored):
    from sharing.models import clean_content_type

    assert clean_content_type(raw) == stored


def test_an_html_upload_is_served_sandboxed_to_its_owner_and_through_links(alice_client, alice):
    file_id = upload(alice_client, "page.html", b"<script>alert(document.cookie)</script>", "text/html").json()["id"]
    own = alice_client.get(f"/api/files/{file_id}/content/")
    share = create_share(StoredFile.objects.get(pk=file_id), 60)
    public = Client().get(reverse("public-share", args=[share.token]))
    for response in (own, public):
        assert response["Content-Security-Policy"] == "sandbox"
        assert response["Content-Disposition"].startswith("attachment")
        assert response["X-Content-Type-Options"] == "nosniff"


# --- 7. no live token in the logs --------------------------------------------------


def test_request_logs_show_only_the_start_of_a_token(shared_file, caplog):
    share = create_share(shared_file, 60)
    share.unshare()
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert Client().get(reverse("public-share", args=[share.token])).status_code == 410
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert share.token not in logged
    assert f"/s/{share.token[:6]}…" in logged


@pytest.mark.django_db(transaction=True)
def test_gunicorn_logs_show_only_the_start_of_a_token(tmp_path, shared_file):
    share = create_share(shared_file, 60)
    port = free_port()
    log = tmp_path / "web.log"
    server = start_web(port, log, workers=1, threads=1)
    try:
        wait_for_port(port, 30, server)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(f"GET /s/{share.token} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            while sock.recv(65536):
                pass
    finally:
        stop(server)
    text = log.read_text()
    assert f"/s/{share.token[:6]}…" in text  # the access log line is there
    assert share.token not in text


def test_redact_keeps_other_paths():
    assert redact("GET /s/abcdefghijklmnop/download 200") == "GET /s/abcdef…/download 200"
    assert redact("GET /api/shares/12/ 200") == "GET /api/shares/12/ 200"


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        ("GET /admin/sharing/share/?q=abcdefghijklmnopqrst HTTP/1.1", "GET /admin/sharing/share/?q=abcdef… HTTP/1.1"),
        ("GET /admin/sharing/share/?o=1&q=abcdefghijklmnopqrst&p=2", "GET /admin/sharing/share/?o=1&q=abcdef…&p=2"),
        ("GET /admin/login/?next=/x/%3Fq%3Dabcdefghijklmnopqrst", "GET /admin/login/?next=/x/%3Fq%3Dabcdef…"),
        ("GET /admin/sharing/share/?q=report.txt HTTP/1.1", None),  # not token-like: kept
        ("GET /admin/sharing/share/?q=alice HTTP/1.1", None),
    ],
)
def test_redact_shortens_a_token_searched_for_in_admin(line, logged):
    assert redact(line) == (logged or line)


# --- 8. the files are the service user's alone ---------------------------------------


def test_stored_files_are_0600_in_0700_folders(alice, make_file, media_root):
    stored = make_file(alice)
    path = stored.content.path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    folder = os.path.dirname(path)
    while os.path.realpath(folder) != os.path.realpath(media_root):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder
        folder = os.path.dirname(folder)
    assert stat.S_IMODE(os.stat(media_root).st_mode) == 0o700  # MEDIA_ROOT itself, made by the first upload


# --- 9. every path that writes a file name cleans it -----------------------------------


def admin_rename(stored, name: str):
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root-password-1")
    admin = Client()
    admin.force_login(root)
    change = reverse("admin:sharing_storedfile_change", args=[stored.pk])
    form = admin.get(change).context["adminform"].form
    data = {field: form.initial.get(field, "") for field in form.fields}
    data.update(
        {
            "name": name,
            "share_items-TOTAL_FORMS": "0",
            "share_items-INITIAL_FORMS": "0",
            "share_items-MIN_NUM_FORMS": "0",
            "share_items-MAX_NUM_FORMS": "1000",
        }
    )
    return admin.post(change, data)


def test_an_admin_edit_cannot_break_a_files_downloads(alice, make_file):
    stored = make_file(alice, name="report.txt")
    response = admin_rename(stored, "evil\r\nSet-Cookie: x=1.txt")
    assert response.status_code == 200  # the form again, with the reason
    assert "cannot hold line breaks" in response.content.decode()
    assert "Suggested: “evilSet-Cookie: x=1.txt”" in response.content.decode()
    stored.refresh_from_db()
    assert stored.name == "report.txt"
    share = Share.create_for(file=stored, expires_at=timezone.now() + timezone.timedelta(minutes=5))
    response = Client().get(reverse("public-share", args=[share.token]))
    assert response.status_code == 200
    assert "\n" not in response["Content-Disposition"]


@pytest.mark.parametrize("name", ["a/b.txt", "tab\there.txt", "dir\\file.txt"])
def test_admin_names_the_problem_with_a_name_that_would_be_changed(alice, make_file, name):
    stored = make_file(alice, name="report.txt")
    response = admin_rename(stored, name)
    assert "cannot hold line breaks, other control characters or slashes" in response.content.decode()
    stored.refresh_from_db()
    assert stored.name == "report.txt"


def test_admin_saves_a_clean_new_name(alice, make_file):
    stored = make_file(alice, name="report.txt")
    assert admin_rename(stored, "Q3 report (final).txt").status_code == 302
    stored.refresh_from_db()
    assert stored.name == "Q3 report (final).txt"


def test_a_name_set_in_code_is_cleaned_on_save(alice, make_file):
    stored = make_file(alice)
    stored.name = "../../etc/pass\nwd"
    stored.save()
    stored.refresh_from_db()
    assert stored.name == "passwd"


@pytest.mark.django_db(transaction=True)
def test_runserver_logs_every_request_with_only_the_start_of_a_token(tmp_path, shared_file, media_root):
    """`make dev` serves with runserver: its request lines stay (200s too), redacted."""
    live = create_share(shared_file, 60)
    ended = create_share(shared_file, 60)
    ended.unshare()
    port = free_port()
    log = tmp_path / "runserver.log"
    server = start_manage("runserver", "--noreload", f"127.0.0.1:{port}", output=log, MEDIA_ROOT=str(media_root))
    try:
        wait_for_port(port, 30, server)
        # The two links, then an admin searching for a link by its token
        # (logged out: a redirect to the log-in page, which names the search).
        paths = [f"/s/{live.token}", f"/s/{ended.token}", f"/admin/sharing/share/?q={live.token}"]
        paths.append(f"/admin/login/?next=/admin/sharing/share/%3Fq%3D{live.token}")
        for path in paths:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
                while sock.recv(65536):
                    pass
        wait_for_text(log, f"%3Fq%3D{live.token[:6]}… HTTP/1.0", 10, process=server)
    finally:
        stop(server)
    text = log.read_text()
    assert f'"GET /s/{live.token[:6]}… HTTP/1.0" 200' in text
    assert f'"GET /s/{ended.token[:6]}… HTTP/1.0" 410' in text
    assert f'"GET /admin/sharing/share/?q={live.token[:6]}… HTTP/1.0" 302' in text
    assert live.token not in text
    assert ended.token not in text
