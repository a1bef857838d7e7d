"""Files sent through the server's tus endpoints (/api/uploads/), in chunks,
each with its SHA-256; an upload cut short (the network, Ctrl-C, a kill)
resumes from the offset the server gives when the same file is put again."""

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from microcloud_cli.config import Account, state_dir
from microcloud_cli.errors import Failure
from microcloud_cli.http import error_text, open_request
from microcloud_cli.progress import Progress

TUS = {"Tus-Resumable": "1.0.0"}
CHUNK_BYTES = 8 * 1024 * 1024
# A chunk whose connection broke is tried again after asking the server where
# the upload stands; past this many breaks in a row the run gives up (and a
# later `put` of the same file resumes).
RETRIES = 4


class Remembered:
    """The unfinished uploads' URLs, by server, path, size and change time:
    a file changed since is a new upload."""

    def __init__(self, folder: Path | None = None):
        self.path = (folder or state_dir()) / "uploads.json"

    def _read(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def _write(self, entries: dict) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(entries, out)
        os.replace(temporary, self.path)

    @staticmethod
    def key(server: str, path: Path) -> str:
        stat = path.stat()
        return f"{server}|{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"

    def get(self, key: str) -> str | None:
        return self._read().get(key)

    def put(self, key: str, url: str) -> None:
        self._write({**self._read(), key: url})

    def forget(self, key: str) -> None:
        entries = self._read()
        if entries.pop(key, None) is not None:
            self._write(entries)


def append_limits(header: str | None) -> tuple[int, int | None]:
    """`Upload-Limit: min-append-size=N, max-append-size=M` (either may be absent)."""
    limits = {}
    for item in (header or "").split(","):
        name, _, value = item.strip().partition("=")
        if value.isdigit():
            limits[name] = int(value)
    return limits.get("min-append-size", 1), limits.get("max-append-size")


def chunk_size(header: str | None) -> int:
    least, most = append_limits(header)
    return max(least, min(CHUNK_BYTES, most or CHUNK_BYTES))


def file_id(upload_file: str) -> int:
    """`Upload-File: /api/files/42/` -> 42."""
    return int(upload_file.rstrip("/").rsplit("/", 1)[-1])


@dataclass
class Place:
    """Where an upload stands on the server."""

    url: str
    offset: int
    limits: str | None = None  # the Upload-Limit header
    file_id: int | None = None  # once it has become a stored file


class PlainFile:
    """A file's own bytes, as the upload reads them."""

    def __init__(self, path: Path):
        self.path = path
        self.size = path.stat().st_size

    def read_at(self, offset: int, count: int) -> bytes:
        with self.path.open("rb") as source:
            source.seek(offset)
            return source.read(count)


class Uploader:
    def __init__(self, account: Account, *, remembered: Remembered | None = None, quiet: bool = False):
        self.account = account
        self.remembered = remembered or Remembered()
        self.quiet = quiet

    def headers(self, **extra) -> dict:
        return {"Authorization": f"Token {self.account.token}", **TUS, **extra}

    def upload(self, path: Path, *, ephemeral: bool = False, source=None, name: str | None = None) -> int:
        """Send `path` (or `source`, bytes computed from it: an encrypted
        body) under `name` (its own by default); return the stored file's id."""
        source = source or PlainFile(path)
        name = name or path.name
        size = source.size
        key = Remembered.key(self.account.url, path) + ("" if name == path.name else f"|{name}")
        place = self.resume(key)
        if place is None:
            place = self.create(name, size, ephemeral)
            self.remembered.put(key, place.url)
        progress = Progress(path.name, size, quiet=self.quiet)
        chunk = chunk_size(place.limits)
        setbacks = 0
        while place.file_id is None:
            progress.show(place.offset)
            data = source.read_at(place.offset, min(chunk, size - place.offset))
            try:
                response = self.append(place, data)
                body = response.read()
            except Failure:
                response = None
            if response is not None and response.status == 204:
                setbacks = 0
                place.offset = int(response.getheader("Upload-Offset"))
                if response.getheader("Upload-File"):
                    place.file_id = file_id(response.getheader("Upload-File"))
                continue
            if response is not None and response.status not in (409, 460):
                progress.done()
                raise Failure(f"{path.name}: {error_text(response, body)}")
            # A broken connection, someone else's chunk (409) or ours
            # damaged on the way (460): ask where it stands and go on.
            setbacks += 1
            if setbacks > RETRIES:
                progress.done()
                raise Failure(f"{path.name}: the upload keeps breaking off; run the same put again to resume it")
            time.sleep(setbacks)
            place = self.where(place.url)
            if place is None:
                self.remembered.forget(key)
                raise Failure(f"{path.name}: the server no longer has this upload; run the same put again")
        progress.show(size)
        progress.done()
        self.remembered.forget(key)
        return place.file_id

    def append(self, place: Place, data: bytes):
        digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
        headers = {
            "Upload-Offset": str(place.offset),
            "Content-Type": "application/offset+octet-stream",
            "Upload-Checksum": f"sha256 {digest}",
        }
        return open_request("PATCH", place.url, headers=self.headers(**headers), body=data, timeout=300)

    def create(self, name: str, size: int, ephemeral: bool) -> Place:
        metadata = [f"filename {base64.b64encode(name.encode()).decode()}"]
        if ephemeral:
            metadata.append(f"delete_when_unshared {base64.b64encode(b'true').decode()}")
        headers = {"Upload-Length": str(size), "Upload-Metadata": ",".join(metadata)}
        response = open_request("POST", f"{self.account.url}/api/uploads/", headers=self.headers(**headers))
        body = response.read()
        if response.status != 201:
            raise Failure(f"{name}: {error_text(response, body)}")
        return Place(
            url=response.getheader("Location"),
            offset=int(response.getheader("Upload-Offset") or 0),
            limits=response.getheader("Upload-Limit"),
        )

    def resume(self, key: str) -> Place | None:
        """An earlier run's upload of the same file, if the server still has it."""
        url = self.remembered.get(key)
        if url is None:
            return None
        place = self.where(url)
        if place is None:
            self.remembered.forget(key)
        return place

    def where(self, url: str) -> Place | None:
        """The upload's place, or None once the server no longer has it
        (expired: 410; removed: 404)."""
        response = open_request("HEAD", url, headers=self.headers())
        body = response.read()
        if response.status in (404, 410):
            return None
        if response.status != 200:
            raise Failure(error_text(response, body))
        finished = response.getheader("Upload-File")
        return Place(
            url=url,
            offset=int(response.getheader("Upload-Offset")),
            limits=response.getheader("Upload-Limit"),
            file_id=file_id(finished) if finished else None,
        )
