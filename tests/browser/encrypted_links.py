"""Encrypted links for the browser tests, made as the command-line client
makes them: each file encrypted with microcloud_cli.sealing (the client's
own code) under its neutral name, the names, types, sizes and note sealed,
and the share created through the API."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.core.files.uploadedfile import UploadedFile
from microcloud_cli import ece
from microcloud_cli.sealing import EncryptedFile, new_secret, seal_metadata, secret_text

from sharing.models import Share, StoredFile

# Records encrypted per step: 4 MiB of ciphertext, whatever the file's size.
RECORDS_PER_STEP = 64


@dataclass(frozen=True)
class Original:
    name: str
    type: str
    path: Path


@dataclass(frozen=True)
class EncryptedLink:
    token: str
    secret: str
    share: Share

    @property
    def url(self) -> str:
        return f"/s/{self.token}#{self.secret}"


def encrypt_file(source: Path, secret: bytes, position: int, target: Path) -> Path:
    """Write `source`'s encrypted body (as file `position` of the link) to `target`, a few records at a time."""
    body = EncryptedFile(source, secret, position)
    step = RECORDS_PER_STEP * ece.RECORD_BYTES
    with target.open("wb") as out:
        for offset in range(0, body.size, step):
            out.write(body.read_at(offset, step))
    return target


def make_encrypted_link(api_client, owner, originals: list[Original], workdir: Path, *, message: str = "", **fields):
    """Encrypt `originals`, upload them as `encrypted-1`, ... and make the link
    through the API (`fields`: max_downloads, password, ...)."""
    secret = new_secret()
    stored = []
    for position, original in enumerate(originals, start=1):
        body = encrypt_file(original.path, secret, position, workdir / f"encrypted-{position}")
        with body.open("rb") as handle:
            upload = UploadedFile(
                handle, name=body.name, content_type="application/octet-stream", size=body.stat().st_size
            )
            stored.append(StoredFile.create_from_upload(owner=owner, upload=upload))
        body.unlink()
    metadata = [{"name": o.name, "type": o.type, "size": o.path.stat().st_size} for o in originals]
    response = api_client.post(
        "/api/shares/",
        {
            "files": [each.pk for each in stored],
            "expires_in": 3600,
            "sealed_metadata": seal_metadata(secret, metadata, message),
            **fields,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    token = response.json()["token"]
    return EncryptedLink(token=token, secret=secret_text(secret), share=Share.objects.get(token=token))
