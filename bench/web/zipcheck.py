"""One whole download of a share's zip (/s/<token>/all.zip), checked outside
the timed cells: every byte the Content-Length promised arrived, and the
bytes are a valid zip of the seeded files (Python's zipfile: the expected
names and sizes, stored, and testzip() finds no CRC-32 that does not match).

wrk, which times the cells, only counts bytes: a response that ends early is
one of its read errors (the cell's "failed"), but a wrong byte would go
unnoticed. This reads the archive once, as a client saving it would.
"""

import http.client
import tempfile
import time
import zipfile
from urllib.parse import urlsplit

CHUNK = 1024 * 1024
TIMEOUT_S = 120


def check(base_url: str, path: str, *, files: int, file_bytes: int) -> dict:
    """GET `path` once and check the zip; "ok" is True only when every check passed."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT_S)
    started = time.monotonic()
    try:
        with tempfile.TemporaryFile() as body:
            conn.request("GET", path)
            response = conn.getresponse()
            declared = response.getheader("Content-Length")
            received = 0
            while chunk := response.read(CHUNK):
                body.write(chunk)
                received += len(chunk)
            result = {
                "status": response.status,
                "content_type": response.getheader("Content-Type"),
                "content_length": int(declared) if declared is not None else None,
                "bytes": received,
                "seconds": round(time.monotonic() - started, 3),
            }
            body.seek(0)
            result.update(_read_zip(body) if response.status == 200 else {"zip_error": "not a 200"})
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        conn.close()
    result["problems"] = _problems(result, files, file_bytes)
    result["ok"] = not result["problems"]
    return result


def _read_zip(body) -> dict:
    try:
        with zipfile.ZipFile(body) as archive:
            infos = archive.infolist()
            return {
                "entries": [[i.filename, i.file_size] for i in infos],
                "stored": all(i.compress_type == zipfile.ZIP_STORED for i in infos),
                "testzip": archive.testzip(),  # the first entry whose CRC-32 is wrong, or None
            }
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        return {"zip_error": f"{type(exc).__name__}: {exc}"}


def _problems(result: dict, files: int, file_bytes: int) -> list[str]:
    problems = []
    if result["status"] != 200:
        problems.append(f"status {result['status']}")
    if result["content_type"] != "application/zip":
        problems.append(f"Content-Type {result['content_type']!r}")
    if result["content_length"] != result["bytes"]:
        problems.append(f"Content-Length {result['content_length']} but {result['bytes']} bytes read")
    if "zip_error" in result:
        problems.append(f"not a valid zip: {result['zip_error']}")
        return problems
    sizes = [size for _, size in result["entries"]]
    if sizes != [file_bytes] * files:
        problems.append(f"entries of {sizes} bytes, not {files} of {file_bytes}")
    if not result["stored"]:
        problems.append("an entry is compressed (a stored zip was expected)")
    if result["testzip"] is not None:
        problems.append(f"testzip(): {result['testzip']!r} does not match its CRC-32")
    return problems


def brief(result: dict) -> str:
    if "error" in result:
        return "error: " + result["error"][:120]
    if not result["ok"]:
        return "FAILED: " + "; ".join(result["problems"])[:300]
    return (
        f"{result['bytes']} bytes = Content-Length, {len(result['entries'])} stored entries, "
        f"testzip() None, in {result['seconds']:.2f} s"
    )
