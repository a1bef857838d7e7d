"""A client generated from our OpenAPI schema works unedited.

openapi-python-client (pinned in requirements-dev.txt) generates a package
from the live schema into a temporary folder, with no warning about the
schema; the README's walk-through then runs through it against gunicorn and
the expiry daemon: token, upload, list, share, renew, unshare, and a share
that expires and reads back `expired` with its lateness.
"""

import importlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import Client

from tests.helpers import free_port, start_manage, start_web, stop, wait_for_port, wait_for_text, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "microcloud_client"


@pytest.fixture
def generated(tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_bytes(Client().get("/api/schema/", {"format": "json"}).content)
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(schema), "--meta", "none", "--output-path", str(tmp_path / PACKAGE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "warning" not in output.lower(), output
    sys.path.insert(0, str(tmp_path))
    try:
        yield lambda name: importlib.import_module(f"{PACKAGE}.{name}")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


@pytest.fixture
def server(tmp_path, settings):
    port = free_port()
    web = start_web(port, tmp_path / "web.log", workers=1, threads=4, MEDIA_ROOT=str(settings.MEDIA_ROOT))
    daemon = start_manage("runexpiry", "--pickup-interval", "0.05", output=tmp_path / "expiry.log")
    try:
        wait_for_port(port, 30, web)
        wait_for_text(tmp_path / "expiry.log", "refresh:", 30, process=daemon)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(daemon)
        stop(web)


def test_the_readme_walk_through_through_a_generated_client(generated, server, alice, settings):
    # The server checks passwords with the production hashers, not the tests' fast one.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    alice.set_password("alice-password-1")
    alice.save()
    client_module, types, models = generated("client"), generated("types"), generated("models")
    auth, files, shares = (generated(f"api.{name}") for name in ("auth", "files", "shares"))
    token_create = importlib.import_module(f"{auth.__name__}.auth_token_create")
    files_create = importlib.import_module(f"{files.__name__}.files_create")
    files_list = importlib.import_module(f"{files.__name__}.files_list")
    files_content = importlib.import_module(f"{files.__name__}.files_content_retrieve")
    shares_create = importlib.import_module(f"{shares.__name__}.shares_create")
    shares_update = importlib.import_module(f"{shares.__name__}.shares_partial_update")
    shares_destroy = importlib.import_module(f"{shares.__name__}.shares_destroy")
    shares_retrieve = importlib.import_module(f"{shares.__name__}.shares_retrieve")

    # 1. A token, as JSON (the generated request model asks only for what a client sends).
    anonymous = client_module.Client(base_url=server)
    token = token_create.sync(
        client=anonymous, body=models.AuthTokenRequest(username="alice", password="alice-password-1")
    )
    assert isinstance(token, models.Token), token
    wrong = token_create.sync(client=anonymous, body=models.AuthTokenRequest(username="alice", password="nope"))
    assert isinstance(wrong, models.ValidationError)  # an error body, parsed

    # The generated client sends "Authorization: Bearer <token>" by default.
    api = client_module.AuthenticatedClient(base_url=server, token=token.token)

    # 2. Upload.
    data = b"quarterly numbers\n"
    upload = models.FileUploadRequest(file=types.File(payload=io.BytesIO(data), file_name="report.txt"))
    stored = files_create.sync(client=api, body=upload)
    assert isinstance(stored, models.StoredFile), stored
    assert (stored.name, stored.size) == ("report.txt", len(data))
    assert files_list.sync(client=api).count == 1
    assert files_content.sync(client=api, id=stored.id).payload.read() == data

    # 3. Share for an hour; 4-5. renew; unshare.
    share = shares_create.sync(client=api, body=models.ShareCreateRequest(file=stored.id, expires_in=3600))
    assert isinstance(share, models.Share), share
    assert share.status == models.StatusEnum.ACTIVE
    renewed = shares_update.sync(id=share.id, client=api, body=models.PatchedShareUpdateRequest(expires_in=86400))
    assert isinstance(renewed, models.Share), renewed
    assert renewed.expires_at > share.expires_at
    assert shares_destroy.sync_detailed(id=share.id, client=api).status_code == 204
    assert shares_retrieve.sync(id=share.id, client=api).status == models.StatusEnum.UNSHARED

    # A file id that is not ours is refused, and the error body is parsed.
    refused = shares_create.sync(client=api, body=models.ShareCreateRequest(file=10**9, expires_in=60))
    assert isinstance(refused, models.ValidationError)

    # 6. A share that expires reads back expired, with its lateness.
    short = shares_create.sync(client=api, body=models.ShareCreateRequest(file=stored.id, expires_in=1))
    time.sleep(1)

    # The status says expired from the deadline on (the clock decides); the
    # end's reason and lateness are the daemon's stamp, written once it ends the row.
    def expired():
        return shares_retrieve.sync(id=short.id, client=api).status == models.StatusEnum.EXPIRED

    assert wait_until(expired, timeout=15)

    def ended():
        return shares_retrieve.sync(id=short.id, client=api).end_reason is not None

    assert wait_until(ended, timeout=30)
    final = shares_retrieve.sync(id=short.id, client=api)
    assert final.end_reason == models.EndReasonEnum.EXPIRED
    assert isinstance(final.lateness_ms, float)
    assert 0 <= final.lateness_ms < 5000
    json.dumps(final.to_dict())  # the model round-trips
