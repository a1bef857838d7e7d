"""The one seam the rest of the project asks for file bytes.

Saving, opening (a range: a bucket's reader seeks with a ranged GET, a
disk's file seeks), checking and deleting are Django's Storage API, on the
storage a file's field names (`stored.content.storage`) or `files()`. What
only some stores can do is asked here, never by testing a class:
- `part_writer`: write a file as its bytes arrive (a bucket; the disk takes
  a whole temporary file instead);
- `partial_object`: assemble an object over many requests (a tus upload in
  a bucket; on the disk a partial file does it);
- `presigned_download`: a URL the client fetches from the store itself;
- `held_under`: what a folder holds, unfinished objects included (a
  bucket; on the disk the folder is listed from the file system).
Nothing here knows what a share is.
"""

from datetime import datetime

from django.core.files.storage import Storage, storages


def files() -> Storage:
    """The store that holds the service's file bytes (STORAGE_URL)."""
    return storages["default"]


def part_writer(name: str, content_type: str):
    """A writer of `name` that takes its bytes as they arrive (write,
    complete, abort), or None when the store takes whole files only."""
    store = files()
    return store.part_writer(name, content_type) if hasattr(store, "part_writer") else None


def partial_object(name: str):
    """An object `name` assembled over many requests (storage.bucket_partials),
    or None when the store has no such objects (the disk)."""
    store = files()
    return store.partial_object(name) if hasattr(store, "partial_object") else None


def held_under(folder: str) -> list[tuple[str, float]] | None:
    """(name after `folder`, when last written as a timestamp) of everything
    the store holds under `folder`, unfinished objects included; None when
    the store cannot say (the disk: list the folder from the file system)."""
    store = files()
    return store.held_under(folder) if hasattr(store, "held_under") else None


def presigns(store: Storage) -> bool:
    return hasattr(store, "presigned_download")


def presigned_download(
    store: Storage, name: str, *, filename: str, content_type: str, ends_by: datetime, longest: int
) -> str | None:
    """A URL that downloads `name` from `store` as `filename`, valid at most
    `longest` seconds and never past `ends_by`; None when less than a second
    is left (stream instead)."""
    return store.presigned_download(
        name, filename=filename, content_type=content_type, ends_by=ends_by, longest=longest
    )
