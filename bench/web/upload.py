"""Uploads: a large multipart upload streamed from memory, and an over-limit probe.

The body is generated as it is sent (zeros, 1 MiB at a time), so the client
holds no copy of the file; what the benchmark watches is the worker's RSS
while Django spools the upload to disk and stores it.
"""

import http.client
import json
import socket
import time

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


def delete_file(port: int, token: str, file_id: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT_S)
    try:
        conn.request("DELETE", f"/api/files/{file_id}/", headers={"Authorization": f"Token {token}"})
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
