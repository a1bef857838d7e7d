"""A public link fetched to disk, resumable: the bytes go to a hidden
partial file beside the target, with the link's ETag kept next to it, and a
later run asks only for the rest (Range with If-Range: a file that changed
meanwhile starts again). A file's ETag is its SHA-256: what arrived is
checked against it before the partial file takes the file's name."""

import email.message
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from microcloud_cli.errors import Failure
from microcloud_cli.http import error_text, get_following, open_request
from microcloud_cli.progress import Progress

PIECE = 1024 * 1024
SHA256_ETAG = re.compile(r'"([0-9a-f]{64})"')


@dataclass
class Partial:
    """The bytes of one link received so far, and what the server said of them."""

    data: Path
    notes: Path

    @classmethod
    def of(cls, link: str, folder: Path) -> "Partial":
        key = hashlib.sha256(link.encode()).hexdigest()[:16]
        return cls(folder / f".microcloud-{key}.part", folder / f".microcloud-{key}.json")

    def read_notes(self) -> dict:
        try:
            return json.loads(self.notes.read_text())
        except (OSError, ValueError):
            return {}

    def received(self) -> int:
        return self.data.stat().st_size if self.data.exists() and self.read_notes().get("etag") else 0

    def start(self, etag: str, name: str) -> None:
        self.notes.write_text(json.dumps({"etag": etag, "name": name}))
        self.data.write_bytes(b"")

    def remove(self) -> None:
        self.data.unlink(missing_ok=True)
        self.notes.unlink(missing_ok=True)


def attachment_name(header: str | None, link: str) -> str:
    """The name in Content-Disposition (RFC 6266, filename* included), without
    any folder; the link's last segment if there is none."""
    message = email.message.Message()
    message["Content-Disposition"] = header or ""
    name = Path(message.get_filename() or "").name
    if name in ("", ".", ".."):
        name = Path(urlsplit(link).path).name or "download"
    return name


def fetch(link: str, *, folder: Path, output: Path | None = None, password: str | None = None, quiet=False) -> Path:
    """Download `link`; return the path written."""
    folder = (output.parent if output else folder).resolve()
    partial = Partial.of(link, folder)
    headers = {"Accept": "application/octet-stream"}
    if password is not None:
        headers["X-Share-Password"] = password
    have = partial.received()
    notes = partial.read_notes()
    refuse_overwriting(output or folder / (notes.get("name") or name_from_head(link, headers)))
    if have:
        headers |= {"Range": f"bytes={have}-", "If-Range": notes["etag"]}
    response = get_following(link, headers=headers)
    if response.status == 416 and have:
        response.read()  # what we have may be all there is: checked below
        total = have
    elif response.status == 206 and have:
        total = int(response.getheader("Content-Range").rsplit("/", 1)[-1])
    elif response.status == 200:
        have, total = 0, int(response.getheader("Content-Length") or 0)
        notes = {
            "etag": response.getheader("ETag") or "",
            "name": attachment_name(response.getheader("Content-Disposition"), link),
        }
        partial.start(notes["etag"], notes["name"])
    else:
        raise Failure(error_text(response))
    target = output or folder / notes["name"]
    refuse_overwriting(target)
    progress = Progress(notes["name"], total, quiet=quiet)
    if response.status in (200, 206):
        with partial.data.open("ab") as out:
            while piece := response.read(PIECE):
                out.write(piece)
                have += len(piece)
                progress.show(have)
    progress.done()
    if have != total:
        raise Failure(f"the download stopped at {have} of {total} bytes; run the same get again to resume it")
    check(partial, notes["etag"])
    os.replace(partial.data, target)
    partial.notes.unlink(missing_ok=True)
    return target


def name_from_head(link: str, headers: dict) -> str:
    """The name the link will give, asked before the download (a HEAD counts
    no download), so that an existing file is refused before any is spent."""
    response = open_request("HEAD", link, headers=headers)
    response.read()
    if response.status != 200:
        return ""  # the GET says what is wrong, in words
    return attachment_name(response.getheader("Content-Disposition"), link)


def refuse_overwriting(target: Path) -> None:
    if target.is_file() or (target.exists() and not target.is_dir()):
        raise Failure(f"{target} already exists: remove it or choose another path with -o")


def check(partial: Partial, etag: str) -> None:
    """A file's ETag is its SHA-256 (a zip's is not: its parts were each
    checked on upload); bytes that do not match never take the name."""
    expected = SHA256_ETAG.fullmatch(etag)
    if not expected:
        return
    digest = hashlib.sha256()
    with partial.data.open("rb") as source:
        while piece := source.read(PIECE):
            digest.update(piece)
    if digest.hexdigest() != expected.group(1):
        partial.remove()
        raise Failure("what arrived does not match the file's SHA-256: nothing was kept; run get again")
