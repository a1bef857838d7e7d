"""File bytes in an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, Cloudflare
R2, Backblaze B2, Garage), through django-storages and boto3.

Two things the stock S3Storage does not do, which downloads need:

- Reading a range. S3File fetches the whole object into a temporary file on
  its first read; a resumed 4 GiB download would fetch 4 GiB to send its
  last megabyte. ObjectReader asks the bucket for the bytes from where it
  stands (one GET with Range per seek) and streams them.
- Reading what a deletion removes. The GET starts when the object is opened
  (and when it seeks): a bucket serves a GET already answered to its end
  even if the object is deleted meanwhile, as a local file opened before its
  unlink is still read whole. A link that ends while a download runs (an
  ephemeral file removed at its deadline) finishes that download.

And one thing only a bucket can do: a presigned URL (docs/deployment.md),
whose signed lifetime is kept inside the share's deadline here.
"""

import io
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.core.files import File
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

from storage.bucket_partials import PART_SIZE, PartialObject
from storage.disposition import attachment
from storage.errors import StorageUnavailable, out_of_reach, reachable

_MISSING = ("NoSuchKey", "404", "NotFound")

# The largest object one CopyObject request copies (S3's limit).
SINGLE_COPY_LIMIT = 5 * 1024**3


class ObjectReader(io.RawIOBase):
    """A seekable, read-only view of one object: reads stream from a GET
    that starts at the current position."""

    def __init__(self, client, bucket: str, key: str):
        super().__init__()
        self._client, self._bucket, self._key = client, bucket, key
        self._position = 0
        self._body = None
        self.size: int | None = None
        self._start()

    def _start(self) -> None:
        """Open the GET from the current position (FileNotFoundError when
        the object is gone)."""
        self._close_body()
        request = {"Bucket": self._bucket, "Key": self._key}
        if self._position:
            # Without a Range from 0: an empty object has no byte 0 to ask for.
            request["Range"] = f"bytes={self._position}-"
        try:
            answer = self._client.get_object(**request)
        except (BotoCoreError, ClientError) as error:
            if out_of_reach(error):
                raise StorageUnavailable(f"the bucket is out of reach: {error}") from error
            code = error.response.get("Error", {}).get("Code", "")
            if code in _MISSING:
                raise FileNotFoundError(f"No object {self._key} in bucket {self._bucket}") from None
            if code == "InvalidRange":  # at or past the end: nothing left to read
                self._body = None
                return
            raise OSError(f"Cannot read {self._key} from bucket {self._bucket}: {error}") from error
        if self.size is None:
            content_range = answer.get("ContentRange")  # "bytes 10-99/100"
            self.size = int(content_range.rsplit("/", 1)[1]) if content_range else answer["ContentLength"]
        self._body = answer["Body"]

    def _close_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._position
        elif whence == io.SEEK_END:
            offset += self._object_size()
        if offset < 0:
            raise ValueError(f"negative seek position {offset}")
        if offset != self._position or self._body is None:
            self._position = offset
            self._start()
        return self._position

    def _object_size(self) -> int:
        if self.size is None:
            self.size = self._client.head_object(Bucket=self._bucket, Key=self._key)["ContentLength"]
        return self.size

    def readinto(self, buffer) -> int:
        if self._body is None:
            return 0
        data = self._body.read(len(buffer))
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def close(self) -> None:
        self._close_body()
        super().close()


class PartWriter:
    """One object written as its bytes arrive (an S3 multipart upload),
    holding at most one part in memory; complete() makes it appear whole,
    abort() leaves nothing (a bucket's lifecycle rule cleans up after a
    process that died in between: docs/deployment.md)."""

    @reachable
    def __init__(self, client, bucket: str, key: str, content_type: str):
        self._client, self._bucket, self._key = client, bucket, key
        started = client.create_multipart_upload(
            Bucket=bucket, Key=key, ContentType=content_type or "application/octet-stream"
        )
        self._upload_id = started["UploadId"]
        self._parts: list[dict] = []
        self._buffer = bytearray()

    @reachable
    def write(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= PART_SIZE:
            self._send(bytes(self._buffer[:PART_SIZE]))
            del self._buffer[:PART_SIZE]

    def _send(self, data: bytes) -> None:
        number = len(self._parts) + 1
        sent = self._client.upload_part(
            Bucket=self._bucket, Key=self._key, UploadId=self._upload_id, PartNumber=number, Body=data
        )
        self._parts.append({"ETag": sent["ETag"], "PartNumber": number})

    @reachable
    def complete(self) -> None:
        if self._buffer or not self._parts:
            self._send(bytes(self._buffer))
            self._buffer.clear()
        self._client.complete_multipart_upload(
            Bucket=self._bucket, Key=self._key, UploadId=self._upload_id, MultipartUpload={"Parts": self._parts}
        )

    @reachable
    def abort(self) -> None:
        self._buffer.clear()
        self._client.abort_multipart_upload(Bucket=self._bucket, Key=self._key, UploadId=self._upload_id)


class BucketStorage(S3Storage):
    """S3Storage with ranged reads and deadline-bound presigned URLs. Every
    option comes from STORAGE_URL (storage.url) or STORAGES."""

    def __init__(self, **options):
        # Signature V4 everywhere (the only one newer regions and most
        # S3-compatible stores accept); its presigned URLs carry X-Amz-Date
        # and X-Amz-Expires, which presigned_download checks.
        options.setdefault("signature_version", "s3v4")
        super().__init__(**options)
        if self.client_config is None:
            # A bucket out of reach must fail a request in seconds (a 503),
            # not hold it for botocore's 60 s connect timeout and retries.
            self.client_config = Config(
                signature_version="s3v4",
                connect_timeout=5,
                read_timeout=60,
                retries={"mode": "standard", "max_attempts": 3},
            )

    # Every operation a request makes: out of reach is StorageUnavailable.
    exists = reachable(S3Storage.exists)
    delete = reachable(S3Storage.delete)
    size = reachable(S3Storage.size)
    listdir = reachable(S3Storage.listdir)

    @reachable
    def _save(self, name, content):
        return super()._save(name, content)

    def _open(self, name, mode="rb"):
        if mode != "rb":
            return super()._open(name, mode)
        key = self._normalize_name(clean_name(name))
        return File(ObjectReader(self.connection.meta.client, self.bucket_name, key), name=name)

    @reachable
    def part_writer(self, name: str, content_type: str) -> PartWriter:
        """Write `name` as its bytes arrive (uploads stream into the bucket:
        storage.upload_handlers)."""
        key = self._normalize_name(clean_name(name))
        return PartWriter(self.connection.meta.client, self.bucket_name, key, content_type)

    def partial_object(self, name: str) -> PartialObject:
        """An object `name` assembled over many requests (a tus upload)."""
        return PartialObject(self.connection.meta.client, self.bucket_name, self._normalize_name(clean_name(name)))

    @reachable
    def held_under(self, folder: str) -> list[tuple[str, float]]:
        """(name after `folder`, when last written as a timestamp) of every
        object and unfinished multipart upload under `folder`: what a sweep
        for bytes nothing names any more looks through."""
        prefix = self._normalize_name(clean_name(folder)).rstrip("/") + "/"
        client, held = self.connection.meta.client, []
        for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket_name, Prefix=prefix):
            held += [(item["Key"][len(prefix) :], item["Initiated"].timestamp()) for item in page.get("Uploads", [])]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket_name, Prefix=prefix):
            held += [
                (item["Key"][len(prefix) :], item["LastModified"].timestamp()) for item in page.get("Contents", [])
            ]
        return held

    @reachable
    def copy(self, source: str, target: str) -> None:
        """Copy an object within the bucket, server side: one CopyObject up
        to S3's 5 GB limit for it (boto3 would copy part by part past 8 MB,
        many requests where one does), in parts past it."""
        bucket = self.bucket_name
        source_key = self._normalize_name(clean_name(source))
        self.connection.meta.client.copy(
            {"Bucket": bucket, "Key": source_key},
            bucket,
            self._normalize_name(clean_name(target)),
            Config=TransferConfig(multipart_threshold=SINGLE_COPY_LIMIT),
        )

    @reachable
    def presigned_download(
        self, name: str, *, filename: str, content_type: str, ends_by: datetime, longest: int
    ) -> str | None:
        """A URL that downloads `name` as an attachment called `filename`,
        whose signed lifetime (X-Amz-Date + X-Amz-Expires) is at most
        `longest` seconds and ends no later than `ends_by`; None when less
        than a whole second is left (the caller streams instead)."""
        client = self.connection.meta.client
        params = {
            "Bucket": self.bucket_name,
            "Key": self._normalize_name(clean_name(name)),
            "ResponseContentDisposition": attachment(filename),
            "ResponseContentType": content_type or "application/octet-stream",
            "ResponseCacheControl": "no-store",
        }
        # The signature's date is the second botocore signs in (truncated),
        # which may be a second later than any clock read here: sign, read
        # the date it carries, and sign again shorter if it would outlive
        # the deadline.
        seconds = longest
        for _ in range(3):
            url = client.generate_presigned_url("get_object", Params=params, ExpiresIn=seconds)
            signed_at, lifetime = signed_lifetime(url)
            left = int((ends_by - signed_at).total_seconds() // 1)
            if left < 1:
                return None
            if lifetime <= left:
                return url
            seconds = min(longest, left)
        return None


def signed_lifetime(url: str) -> tuple[datetime, int]:
    """The signing time and lifetime in seconds a SigV4 presigned URL carries."""
    query = parse_qs(urlsplit(url).query)
    signed_at = datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return signed_at, int(query["X-Amz-Expires"][0])


def signed_end(url: str) -> datetime:
    """When a SigV4 presigned URL stops being valid."""
    signed_at, lifetime = signed_lifetime(url)
    return signed_at + timedelta(seconds=lifetime)
