"""Uploads: a large file sent once as multipart and once over tus, and an over-limit probe.

The body is generated as it is sent (zeros, 1 MiB at a time), so the client
holds no copy of the file; what the benchmark watches is the worker's RSS
while Django spools the upload to disk and stores it (multipart), or while
uploads.writing appends each chunk and uploads.finishing stores the file
(tus). Both are plain http.client requests on one kept-alive connection,
timed from the first byte sent to the answer that says the file is stored;
the stored file's size and SHA-256 are then read back from the API.
"""

import base64
import hashlib
import http.client
import json
import socket
import time
from urllib.parse import urlsplit

CHUNK = 1024 * 1024
BOUNDARY = "microcloud-bench-boundary"
IO_TIMEOUT_S = 120.0  # one socket operation; the server may pause while it stores the file


def _parts(size: int) -> tuple[bytes, bytes]:
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="upload.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    return head, f"\r\n--{BOUNDARY}--\r\n".encode()


def upload(port: int, token: str, size: int) -> dict:
    """POST /api/files/ with a `size`-byte file; return the status, timings and file id."""
    head, tail = _parts(size)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT_S)
    started = time.monotonic()
    try:
        conn.putrequest("POST", "/api/files/")
        conn.putheader("Authorization", f"Token {token}")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")
        conn.putheader("Content-Length", str(len(head) + size + len(tail)))
        conn.endheaders()
        conn.send(head)
        zeros = bytes(CHUNK)
        left = size
        while left > 0:
            conn.send(zeros[: min(CHUNK, left)])
            left -= CHUNK
        conn.send(tail)
        sent = time.monotonic()
        response = conn.getresponse()
        body = response.read()
        done = time.monotonic()
    finally:
        conn.close()
    file_id = None
    if response.status == 201:
        file_id = json.loads(body)["id"]
    return {
        "bytes": size,
        "status": response.status,
        "file_id": file_id,
        "send_s": round(sent - started, 3),
        "total_s": round(done - started, 3),
        "mb_per_s": size / (done - started) / 1e6,
    }


TUS_VERSION = "1.0.0"
TUS_FILE_PATH = "/api/files/"  # the Upload-File header's prefix


def tus_upload(port: int, token: str, size: int, chunk_bytes: int) -> dict:
    """A `size`-byte file over tus 1.0 (docs/api.md): POST /api/uploads/
    creates it, PATCHes of `chunk_bytes` append it, the last one stores it.
    Return the last status, timings and the stored file's id."""
    headers = {"Authorization": f"Token {token}", "Tus-Resumable": TUS_VERSION}
    name = base64.b64encode(b"upload.bin").decode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT_S)
    zeros = bytes(CHUNK)
    chunks, offset, upload_path, file_path, sent = 0, 0, None, None, None
    started = time.monotonic()
    try:
        conn.request(
            "POST",
            "/api/uploads/",
            headers={**headers, "Upload-Length": str(size), "Upload-Metadata": f"filename {name}"},
        )
        response = conn.getresponse()
        response.read()
        created = time.monotonic()
        location = response.getheader("Location")
        if response.status == 201 and location:
            upload_path = urlsplit(location).path
            while offset < size:
                length = min(chunk_bytes, size - offset)
                conn.putrequest("PATCH", upload_path)
                for key, value in headers.items():
                    conn.putheader(key, value)
                conn.putheader("Content-Type", "application/offset+octet-stream")
                conn.putheader("Upload-Offset", str(offset))
                conn.putheader("Content-Length", str(length))
                conn.endheaders()
                left = length
                while left > 0:
                    conn.send(zeros[: min(CHUNK, left)])
                    left -= CHUNK
                sent = time.monotonic()
                response = conn.getresponse()
                response.read()
                chunks += 1
                if response.status != 204 or response.getheader("Upload-Offset") != str(offset + length):
                    break
                offset += length
                file_path = response.getheader("Upload-File") or file_path
        done = time.monotonic()
    finally:
        conn.close()
    file_id = None
    if offset == size and file_path and file_path.startswith(TUS_FILE_PATH):
        file_id = int(file_path[len(TUS_FILE_PATH) :].strip("/"))
    return {
        "bytes": size,
        "chunk_bytes": chunk_bytes,
        "requests": 1 + chunks,
        "status": response.status,
        "offset": offset,
        "file_id": file_id,
        "upload_path": upload_path,
        "create_s": round(created - started, 3),
        # The last chunk's wait for its answer: the finish (digests, the copy
        # into storage, the row) happens while the client waits.
        "finish_s": None if sent is None else round(done - sent, 3),
        "total_s": round(done - started, 3),
        "mb_per_s": size / (done - started) / 1e6 if file_id else None,
    }


def zeros_sha256(size: int) -> str:
    """The SHA-256 of `size` zero bytes: what both uploads send."""
    digest, zeros, left = hashlib.sha256(), bytes(CHUNK), size
    while left > 0:
        digest.update(zeros[: min(CHUNK, left)])
        left -= CHUNK
    return digest.hexdigest()


def stored_file(port: int, token: str, file_id: int) -> dict:
    """GET /api/files/<id>/: the stored file's size and SHA-256 (status and {} otherwise)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT_S)
    try:
        conn.request("GET", f"/api/files/{file_id}/", headers={"Authorization": f"Token {token}"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    found = json.loads(body) if response.status == 200 else {}
    return {"status": response.status, "size": found.get("size"), "sha256": found.get("sha256")}


def verify(port: int, token: str, result: dict, expected_sha256: str) -> None:
    """Add `verified` to an upload's result: the API shows its size and SHA-256."""
    if not result.get("file_id"):
        return
    found = stored_file(port, token, result["file_id"])
    result["stored"] = found
    result["verified"] = found["size"] == result["bytes"] and found["sha256"] == expected_sha256


def delete_file(port: int, token: str, file_id: int) -> int:
    return _delete(port, token, f"/api/files/{file_id}/")


def terminate_upload(port: int, token: str, upload_path: str) -> int:
    """DELETE the finished upload's record (its file is deleted apart)."""
    return _delete(port, token, upload_path, {"Tus-Resumable": TUS_VERSION})


def _delete(port: int, token: str, path: str, extra: dict | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT_S)
    try:
        conn.request("DELETE", path, headers={"Authorization": f"Token {token}", **(extra or {})})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def over_limit_probe(port: int, token: str, declared: int, wait_s: float = 10.0) -> dict:
    """Declare a `declared`-byte upload, send none of its body, and wait for an answer.

    A 413 that arrives while the body is still unsent was decided from the
    headers alone: the server read none of the oversized body.
    """
    head, tail = _parts(declared)
    request = (
        "POST /api/files/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Token {token}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {len(head) + declared + len(tail)}\r\n\r\n"
    ).encode()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        sock.sendall(request)
        received = b""
        try:
            while b"\r\n" not in received and time.monotonic() - started < wait_s:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                received += chunk
        except TimeoutError:
            pass
    status_line = received.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status_line.split()
    status = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None
    return {
        "declared_bytes": declared,
        "body_bytes_sent": 0,
        "status": status,
        "answered_s": round(time.monotonic() - started, 3) if status else None,
        "refused_before_body": status == 413,
    }
