"""An object assembled over many requests, on any node: a resumable (tus)
upload's bytes in a bucket, with nothing on the local disk.

The bytes received so far are an S3 multipart upload's whole parts (part n
holds bytes [(n-1) x PART_SIZE, n x PART_SIZE)) and a tail, the bytes past
the last whole part, kept as an object of its own named by the offset it
ends at (`KEY.tail-OFFSET`). A request that appends at an offset reads that
tail (less than a part, the most it holds in memory), adds its body, sends
every part it fills and leaves a new tail. Part numbers are fixed by the
offset, so a chunk that is not kept (a checksum mismatch) is simply sent
again over the same parts, and an old tail goes only once the upload's
offset has moved past it. Completing sends the tail as the last part and
joins the parts into the object KEY.
"""

from botocore.exceptions import ClientError

from storage.errors import reachable

# S3 wants parts of at least 5 MiB (but the last); 8 MiB is what boto3's own
# transfers use, and the most an upload holds in memory.
PART_SIZE = 8 * 1024 * 1024


def _missing(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code", "") in ("NoSuchKey", "NoSuchUpload", "404", "NotFound")


class PartialObject:
    def __init__(self, client, bucket: str, key: str):
        self.client, self.bucket, self.key = client, bucket, key

    def tail_key(self, end: int) -> str:
        return f"{self.key}.tail-{end}"

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

    @reachable
    def read_tail(self, end: int) -> bytes:
        if end % PART_SIZE == 0:
            return b""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.tail_key(end))["Body"].read()
        except ClientError as error:
            if _missing(error):
                raise FileNotFoundError(self.tail_key(end)) from None
            raise

    def appender(self, start: int) -> "Appender":
        return Appender(self, start)

    @reachable
    def drop_tail(self, end: int) -> None:
        """Delete the tail that ends at `end` (the offset moved past it)."""
        if end % PART_SIZE:
            self.client.delete_object(Bucket=self.bucket, Key=self.tail_key(end))

    @reachable
    def complete(self, length: int) -> None:
        """Make KEY the object of `length` bytes the parts and tail hold."""
        upload_id = self.upload_id()
        tail = self.read_tail(length)
        whole = length // PART_SIZE
        count = whole + 1 if tail or whole == 0 else whole
        if count > whole:
            self.send_part(upload_id, count, tail)
        etags = {}
        for page in self.client.get_paginator("list_parts").paginate(
            Bucket=self.bucket, Key=self.key, UploadId=upload_id
        ):
            for part in page.get("Parts", []):
                etags[part["PartNumber"]] = part["ETag"]
        missing = [number for number in range(1, count + 1) if number not in etags]
        if missing:
            raise FileNotFoundError(f"{self.key}: parts {missing} were never received")
        parts = [{"PartNumber": number, "ETag": etags[number]} for number in range(1, count + 1)]
        self.client.complete_multipart_upload(
            Bucket=self.bucket, Key=self.key, UploadId=upload_id, MultipartUpload={"Parts": parts}
        )

    @reachable
    def send_part(self, upload_id: str, number: int, data: bytes) -> None:
        self.client.upload_part(Bucket=self.bucket, Key=self.key, UploadId=upload_id, PartNumber=number, Body=data)

    @reachable
    def discard(self) -> None:
        """Leave nothing: the unfinished upload, its tails, a completed KEY."""
        listed = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=self.key)
        for upload in listed.get("Uploads", []):
            if upload["Key"] == self.key:
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=upload["UploadId"])
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.key):
            for item in page.get("Contents", []):
                if item["Key"] == self.key or item["Key"].startswith(f"{self.key}.tail-"):
                    self.client.delete_object(Bucket=self.bucket, Key=item["Key"])


class Appender:
    """One request's bytes appended from `start`: whole parts sent as they
    fill, the rest left as the new tail when the request keeps them."""

    def __init__(self, partial: PartialObject, start: int):
        self.partial = partial
        self.upload_id = partial.upload_id()
        self.base = start - start % PART_SIZE
        self.buffer = bytearray(partial.read_tail(start))

    def write(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= PART_SIZE:
            self.partial.send_part(self.upload_id, self.base // PART_SIZE + 1, bytes(self.buffer[:PART_SIZE]))
            self.base += PART_SIZE
            del self.buffer[:PART_SIZE]

    @reachable
    def close(self, *, keep: bool) -> None:
        """Leave the tail for the next request, if this one's bytes are kept."""
        if keep and self.buffer:
            end = self.base + len(self.buffer)
            self.partial.client.put_object(
                Bucket=self.partial.bucket, Key=self.partial.tail_key(end), Body=bytes(self.buffer)
            )
        self.buffer = bytearray()
