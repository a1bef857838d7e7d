"""File bytes: where they live and how they get there. Nothing here knows
what a share is; the rest asks `storage.store` (the seam) and Django's
Storage API.

- `store`: the seam: the service's store, and what only some stores do
  (take a file in parts, assemble an object over many requests, presign).
- `disk`: the local disk, made durable (a saved file is synced before its
  row commits).
- `buckets`: an S3-compatible bucket (django-storages), read by ranges,
  written in parts, presigned downloads.
- `bucket_partials`: a tus upload's bytes gathered in a bucket.
- `errors`: a store out of reach (StorageUnavailable, a 503), told apart
  from a missing object.
- `stored`: a stored file's random name and the digests of one pass.
- `upload_handlers`: where a multipart upload's bytes go as they arrive.
- `writeback`: the disk's writeback started early.
- `disposition`: the Content-Disposition of a file sent as an attachment.
- `url`: STORAGE_URL parsed into Django's STORAGES setting.
- `moving`: copying every file's bytes between the disk and a bucket
  (`manage.py movefiles`, over the catalogue sharing gives it).
"""
