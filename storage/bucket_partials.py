"""An object assembled over many requests, on any node: a resumable (tus)
upload's bytes in a bucket, with nothing on the local disk.

The bytes received so far are an S3 multipart upload's parts and nothing
else. A request that appends sends its own bytes as parts while they
arrive, and never reads back or rewrites what earlier requests sent: it
costs one bucket call to find the upload and one per part, its own bytes'
worth of traffic, however many requests came before it.

S3 joins only parts of at least 5 MiB (but the last), so every append but
the one that completes the object carries at least `least_append(length)`
bytes (the caller refuses smaller ones before reading them), and a part is
sent only when what follows it in the same append is that long too (or
nothing follows: the append's last part). A part is numbered by where it
starts, `start // least_append(length) + 1`: the parts that make the object
start at least that far apart, so no two of them share a number, and a
part sent again at the same place (a chunk that was not kept, resent)
replaces the one before. A part sent by an append that was not kept, at a
place the kept ones then pass over, stays in the upload unused: completing
follows the chain from byte 0, each part's size leading to the next one's
number, and joins only those.
"""

from storage.errors import reachable

# The part size of a file written in one request (storage.buckets.PartWriter),
# and the most of an append held in memory before it is sent as a part (with
# at most a smallest part's worth more, when the append ends right after):
# 8 MiB is what boto3's own transfers use.
PART_SIZE = 8 * 1024 * 1024
# S3 refuses to join smaller parts, but the last.
SMALLEST_PART = 5 * 1024 * 1024
# S3 numbers an upload's parts from 1 to 10,000.
MOST_PARTS = 10_000


def least_append(length: int) -> int:
    """The fewest bytes an append to an object of `length` bytes may carry
    unless it completes the object: S3's smallest part, or more when the
    file would not fit in 10,000 parts that small (past 48.8 GiB)."""
    return max(SMALLEST_PART, -(-length // MOST_PARTS))


class PartialObject:
    def __init__(self, client, bucket: str, key: str):
        self.client, self.bucket, self.key = client, bucket, key

    @reachable
    def create(self) -> None:
        self.client.create_multipart_upload(Bucket=self.bucket, Key=self.key)

    @reachable
    def upload_id(self) -> str:
        """The multipart upload's id (FileNotFoundError when there is none:
        discarded, or completed)."""
        listed = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=self.key)
        for upload in listed.get("Uploads", []):
            if upload["Key"] == self.key:
                return upload["UploadId"]
        raise FileNotFoundError(f"No unfinished upload {self.key} in bucket {self.bucket}")

    def appender(self, start: int, size: int, length: int) -> "Appender":
        """The writer of an append of `size` bytes at `start` to the object
        of `length` bytes (FileNotFoundError when the upload is gone)."""
        return Appender(self, start, size, length)

    @reachable
    def send_part(self, upload_id: str, number: int, data: bytes) -> None:
        self.client.upload_part(Bucket=self.bucket, Key=self.key, UploadId=upload_id, PartNumber=number, Body=data)

    @reachable
    def complete(self, length: int) -> None:
        """Make KEY the object of `length` bytes the parts hold, from byte 0
        on (FileNotFoundError when they do not: gone, or never received)."""
        upload_id = self.upload_id()
        received = {}
        for page in self.client.get_paginator("list_parts").paginate(
            Bucket=self.bucket, Key=self.key, UploadId=upload_id
        ):
            for part in page.get("Parts", []):
                received[part["PartNumber"]] = part
        step = least_append(length)
        chain, position = [], 0
        while position < length:
            part = received.get(position // step + 1)
            if part is None or part["Size"] <= 0:
                raise FileNotFoundError(f"{self.key}: no part starts at byte {position}")
            chain.append({"PartNumber": part["PartNumber"], "ETag": part["ETag"]})
            position += part["Size"]
        if position != length:
            raise FileNotFoundError(f"{self.key}: the parts hold {position} bytes, not {length}")
        self.client.complete_multipart_upload(
            Bucket=self.bucket, Key=self.key, UploadId=upload_id, MultipartUpload={"Parts": chain}
        )

    @reachable
    def discard(self) -> None:
        """Leave nothing: the unfinished upload, a completed KEY, and the
        tail objects (`KEY.tail-OFFSET`) an upload begun by an earlier
        version of this module may have left."""
        listed = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=self.key)
        for upload in listed.get("Uploads", []):
            if upload["Key"] == self.key:
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=upload["UploadId"])
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.key):
            for item in page.get("Contents", []):
                if item["Key"] == self.key or item["Key"].startswith(f"{self.key}.tail-"):
                    self.client.delete_object(Bucket=self.bucket, Key=item["Key"])


class Appender:
    """One request's append of `size` bytes at `start`: parts sent as the
    bytes arrive; `kept` says how many of them are in parts so far."""

    def __init__(self, partial: PartialObject, start: int, size: int, length: int):
        self.partial = partial
        self.upload_id = partial.upload_id()
        self.step = least_append(length)
        self.piece = max(PART_SIZE, self.step)
        self.start = self.sent = start
        self.end = start + size
        self.completes = self.end == length
        self.buffer = bytearray()

    @property
    def kept(self) -> int:
        return self.sent - self.start

    def write(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= self.piece and self._may_follow(self.end - self.sent - self.piece):
            self._send(bytes(self.buffer[: self.piece]))
            del self.buffer[: self.piece]

    def _may_follow(self, rest: int) -> bool:
        """Whether a part may end where `rest` bytes of the append are left:
        enough of them for a part of their own, or any when they end the
        object (its last part may be smaller); none left is the append's
        last part, sent by finish()."""
        return rest >= self.step or (self.completes and rest > 0)

    def finish(self) -> None:
        """Send the rest of an append that arrived whole and is kept."""
        if self.buffer:
            self._send(bytes(self.buffer))
            self.buffer = bytearray()

    def drop(self) -> None:
        """Forget the rest of an append that is not kept (cut short, or not
        matching its checksum): only whole parts already sent remain."""
        self.buffer = bytearray()

    def _send(self, data: bytes) -> None:
        self.partial.send_part(self.upload_id, self.sent // self.step + 1, data)
        self.sent += len(data)
