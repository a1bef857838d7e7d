"""The local disk storage, made durable: a file it saves is on the disk,
name and bytes, before the caller goes on to commit the row that lists it.

Django's FileSystemStorage leaves a saved file's bytes in the page cache
(the kernel writes them back within about 30 s), and a multipart upload's
temporary file is renamed into place the same way. A power cut in between
would leave a committed StoredFile whose bytes are missing or zeros; so the
file and its folder's entry are synced here, once, where every save passes.
"""

import os

from django.core.files.storage import FileSystemStorage


def sync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DurableFileSystemStorage(FileSystemStorage):
    def _save(self, name, content):
        name = super()._save(name, content)
        full_path = self.path(name)
        sync_path(full_path)
        sync_path(os.path.dirname(full_path))  # the new name itself
        return name
