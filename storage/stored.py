"""What a stored file's bytes are known by: the random name they are kept
under (on the disk and in a bucket alike) and the digests of one pass over
them."""

import hashlib
import uuid
import zlib

from django.utils import timezone


def new_name() -> str:
    # The original name lives in StoredFile.name; on disk a random name avoids
    # collisions and never lets a user choose a path.
    return f"files/{timezone.now():%Y/%m}/{uuid.uuid4().hex}"


class Digests:
    """What is known of a file's bytes after one pass over them: its size, its
    SHA-256 (shown to recipients) and its CRC-32 (a zip's headers carry it, so
    an archive of several files is known to the byte before it is sent)."""

    def __init__(self):
        self.size = 0
        self.crc32 = 0
        self._sha256 = hashlib.sha256()

    def update(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self.crc32 = zlib.crc32(chunk, self.crc32)
        self._sha256.update(chunk)

    @property
    def sha256(self) -> str:
        return self._sha256.hexdigest()
