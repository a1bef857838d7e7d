"""What the tus upload tests share (no tests here): requests as a tus client
sends them, through Django's test client."""

import base64
import hashlib
import zlib
from urllib.parse import urlparse

TUS = {"HTTP_TUS_RESUMABLE": "1.0.0"}
OFFSET_STREAM = "application/offset+octet-stream"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def metadata(**pairs: str) -> str:
    return ",".join(f"{key} {b64(value)}" if value else key for key, value in pairs.items())


def create(
    client, length: int, meta: str | None = None, body: bytes | None = None, endpoint: str = "/api/uploads/", **headers
):
    extra = {**TUS, "HTTP_UPLOAD_LENGTH": str(length), **headers}
    if meta is not None:
        extra["HTTP_UPLOAD_METADATA"] = meta
    if body is None:
        return client.post(endpoint, **extra)
    return client.generic("POST", endpoint, body, content_type=OFFSET_STREAM, **extra)


def path_of(response) -> str:
    return urlparse(response["Location"]).path


def new_upload(client, length: int, endpoint: str = "/api/uploads/", **meta: str) -> str:
    response = create(client, length, metadata(**meta) if meta else None, endpoint=endpoint)
    assert response.status_code == 201, response.content
    return path_of(response)


def patch(client, path: str, offset: int, body: bytes, content_type: str = OFFSET_STREAM, **headers):
    extra = {**TUS, "HTTP_UPLOAD_OFFSET": str(offset), **headers}
    return client.generic("PATCH", path, body, content_type=content_type, **extra)


def head(client, path: str):
    return client.head(path, **TUS)


def digests(data: bytes) -> tuple[str, int]:
    return hashlib.sha256(data).hexdigest(), zlib.crc32(data)


def checksum(algorithm: str, data: bytes) -> str:
    return f"{algorithm} {base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def upload_id(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[1]
