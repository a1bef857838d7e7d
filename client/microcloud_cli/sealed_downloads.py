"""An end-to-end encrypted link fetched and decrypted as it arrives.

The sealed metadata (GET /s/<token>/sealed) gives each file's name and
size; each file's RFC 8188 body is decrypted record by record into a hidden
partial file of whole records. A later run keeps those records and asks only
for the ones it lacks (Range from the next record's place, with If-Range),
so a resumed download never fetches the part it has again. A record that
does not decrypt (altered bytes, the wrong key) or a body cut before its
last record keeps nothing under the file's name.
"""

import base64
import hashlib
import http.client
import json
import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from microcloud_cli import ece
from microcloud_cli.downloads import refuse_overwriting
from microcloud_cli.errors import Failure
from microcloud_cli.http import error_text, get_following
from microcloud_cli.progress import Progress
from microcloud_cli.sealing import CONTENT_INFO, derive, open_metadata
from microcloud_cli.wrapping import check_parameters, unwrap
from microcloud_cli.wrapping import derive as derive_from_password

PIECE = 1024 * 1024


def split_link(link: str) -> tuple[str, str]:
    """The link without its #fragment, and the fragment (the secret)."""
    parts = urlsplit(link)
    return urlunsplit(parts._replace(fragment="")), parts.fragment


def safe_name(name: str, position: int) -> str:
    """A name from the metadata, as a file in the chosen folder only."""
    name = Path(str(name)).name
    return name if name not in ("", ".", "..") else f"file-{position}"


def wrapped_parameters(link: str) -> dict | None:
    """GET /s/<token>/key: how the link's password derives its key, or None
    for a link whose secret is not wrapped (or no such link)."""
    response = get_following(f"{link}/key", headers={"Accept": "application/json"})
    body = response.read()
    if response.status == 404:
        return None
    if response.status != 200:
        raise Failure(error_text(response, body))
    try:
        return json.loads(body)
    except ValueError:
        raise Failure("the link's key parameters are not JSON") from None


def is_sealed(link: str, password: str | None) -> bool:
    """Whether a link given without its #secret is an encrypted one (its
    files would be ciphertext to whoever downloads them)."""
    headers = {"Accept": "application/octet-stream"}
    if password is not None:
        headers["X-Share-Password"] = password
    response = get_following(f"{link}/sealed", headers=headers)
    body = response.read()
    if response.status == 404:
        return False
    if response.status != 200:
        raise Failure(error_text(response, body))
    return True


def unwrap_secret(link: str, parameters: dict, password: str) -> tuple[bytes, str]:
    """(the link's secret, the verifier that proves the password): the
    verifier goes to the server as the link's password; the secret comes
    back wrapped, beside the sealed metadata, and opens here."""
    salt, iterations = check_parameters(parameters)
    derived = derive_from_password(password, salt, iterations)
    response = get_following(f"{link}/sealed", headers={"X-Share-Password": derived.verifier})
    body = response.read()
    if response.status != 200:
        raise Failure(error_text(response, body))
    wrapped = response.getheader("X-Wrapped-Secret")
    if not wrapped:
        raise Failure("the server sent no wrapped key for this link")
    return unwrap(wrapped, derived.key), derived.verifier


def fetch_sealed(link: str, secret: bytes, *, folder: Path, password: str | None = None, quiet=False) -> list[Path]:
    base, _ = split_link(link)
    headers = {"Accept": "application/octet-stream"}
    if password is not None:
        headers["X-Share-Password"] = password
    folder = folder.resolve()
    # Kept beside the partial files until they are done: a one-download link
    # that ended by its limit refuses its metadata (as it refuses a whole
    # file) while it still sends a download cut short the rest of its bytes.
    kept = folder / f".microcloud-{hashlib.sha256(base.encode()).hexdigest()[:16]}.sealed"
    try:
        blob = kept.read_bytes()
        resuming = True
    except OSError:
        resuming = False
        response = get_following(f"{base}/sealed", headers=headers)
        blob = response.read()
        if response.status != 200:
            raise Failure(error_text(response, blob)) from None
    metadata = open_metadata(secret, blob)
    entries = metadata["files"]
    targets = [folder / safe_name(entry.get("name"), n) for n, entry in enumerate(entries, start=1)]
    key = derive(secret, CONTENT_INFO)
    decryptions = [
        Decryption(base if len(entries) == 1 else f"{base}/files/{n}", target, key, int(entry["size"]), headers)
        for n, (entry, target) in enumerate(zip(entries, targets, strict=True), start=1)
    ]
    # A run cut after some of the files were whole leaves those under their
    # names: the metadata kept beside them says they are this link's own.
    done = [resuming and decryption.finished_earlier() for decryption in decryptions]
    for decryption, finished in zip(decryptions, done, strict=True):
        if not finished:
            refuse_overwriting(decryption.target)
    kept.write_bytes(blob)
    try:
        written = [
            decryption.target if finished else decryption.run(quiet=quiet)
            for decryption, finished in zip(decryptions, done, strict=True)
        ]
    except Failure:
        if not any(decryption.partial.exists() for decryption in decryptions):
            kept.unlink(missing_ok=True)  # nothing to resume: nothing kept
        raise
    kept.unlink(missing_ok=True)
    return written


class Decryption:
    def __init__(self, url: str, target: Path, key: bytes, size: int, headers: dict):
        self.url, self.target, self.key, self.size, self.headers = url, target, key, size, headers
        name = hashlib.sha256(f"{url}|{target}".encode()).hexdigest()[:16]
        self.partial = target.parent / f".microcloud-{name}.plain.part"
        self.notes = target.parent / f".microcloud-{name}.plain.json"

    def run(self, *, quiet: bool) -> Path:
        per = ece.plaintext_per_record()
        notes = self.read_notes()
        done = self.partial.stat().st_size // per if notes and self.partial.exists() else 0
        headers = dict(self.headers)
        if done:
            headers |= {"Range": f"bytes={ece.record_offset(done)}-", "If-Range": notes["etag"]}
        response = get_following(self.url, headers=headers)
        if response.status == 200:
            done, notes = 0, None
        elif not (response.status == 206 and done):
            raise Failure(error_text(response))
        elif not response.getheader("Content-Range", "").startswith(f"bytes {ece.record_offset(done)}-"):
            raise Failure("the server sent another range than the one asked for")
        progress = Progress(self.target.name, self.size, quiet=quiet)
        try:
            self.receive(response, done, notes, progress)
        except ece.Damaged as damaged:
            self.forget()
            raise Failure(f"{self.target.name}: {damaged}; nothing was kept") from None
        except (OSError, http.client.HTTPException):
            raise Failure(f"{self.target.name}: the download broke off; run the same get again to resume it") from None
        finally:
            progress.done()
        if self.partial.stat().st_size != self.size:
            self.forget()
            raise Failure(f"{self.target.name}: decrypted to another size than its metadata says; nothing was kept")
        os.replace(self.partial, self.target)
        self.notes.unlink(missing_ok=True)
        return self.target

    def receive(self, response, done: int, notes: dict | None, progress: Progress) -> None:
        per = ece.plaintext_per_record()
        buffer = bytearray()
        if notes is None:
            while len(buffer) < ece.HEADER_BYTES and (piece := response.read(PIECE)):
                buffer += piece
            header = ece.Header.parse(bytes(buffer[: ece.HEADER_BYTES]))
            del buffer[: ece.HEADER_BYTES]
            notes = {"etag": response.getheader("ETag") or "", "salt": base64.b64encode(header.salt).decode()}
            self.notes.write_text(json.dumps({**notes, "rs": header.rs}))
            self.partial.write_bytes(b"")
        else:
            header = ece.Header(salt=base64.b64decode(notes["salt"]), rs=notes["rs"])
        if header.rs != ece.RECORD_BYTES:
            raise ece.Damaged(f"records of {header.rs} bytes, not this format's {ece.RECORD_BYTES}")
        cipher = ece.Cipher(self.key, header)
        index, finished = done, False
        with self.partial.open("r+b") as out:
            out.truncate(done * per)  # whole records only: a cut one is asked for again
            out.seek(done * per)
            while True:
                piece = response.read(PIECE)
                buffer += piece
                # A record is decrypted once the next byte is known to exist
                # or the body has ended: only then is it known to be the last.
                while len(buffer) > header.rs or (not piece and buffer):
                    record = bytes(buffer[: header.rs])
                    del buffer[: header.rs]
                    plaintext, last = cipher.open(index, record)
                    if last and buffer:
                        raise ece.Damaged("bytes after the last record")
                    out.write(plaintext)
                    index += 1
                    finished = last
                    progress.show(out.tell())
                if not piece:
                    break
        if not finished:
            raise ece.Damaged("the body ended before its last record")

    def finished_earlier(self) -> bool:
        """Whether an earlier run of this get put the whole file in place."""
        return self.target.is_file() and self.target.stat().st_size == self.size and not self.notes.exists()

    def read_notes(self) -> dict | None:
        try:
            return json.loads(self.notes.read_text())
        except (OSError, ValueError):
            return None

    def forget(self) -> None:
        self.partial.unlink(missing_ok=True)
        self.notes.unlink(missing_ok=True)
