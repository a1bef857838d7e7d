"""STORAGE_URL: where file bytes live, in one setting.

Empty (the default): the local disk, MEDIA_ROOT. Otherwise an S3-compatible
bucket, `s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME&addressing=path]`:

- PREFIX: the folder inside the bucket every key starts with.
- endpoint: the S3 API's address for a store other than AWS (MinIO, Ceph
  RGW, R2, B2, Garage), e.g. `http://127.0.0.1:9000`.
- region: the bucket's region (AWS; most other stores take any).
- addressing: `path` (bucket in the path, what MinIO and most self-hosted
  stores want) or `virtual` (bucket in the host name).

Credentials are never in the URL: boto3 reads them from the environment
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE)
or the machine's role, as every AWS tool does. docs/deployment.md has
examples for MinIO and AWS.
"""

from urllib.parse import parse_qs, urlsplit

from django.core.exceptions import ImproperlyConfigured

DISK_BACKEND = "storage.disk.DurableFileSystemStorage"
BUCKET_BACKEND = "storage.buckets.BucketStorage"
_QUERY_KEYS = {"endpoint", "region", "addressing"}


def storage_from_url(url: str) -> dict:
    """The STORAGES["default"] entry STORAGE_URL describes."""
    url = url.strip()
    if not url:
        return {"BACKEND": DISK_BACKEND}
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.hostname:
        raise ImproperlyConfigured(f"STORAGE_URL must be empty or s3://BUCKET[/PREFIX][?...], got {url!r}")
    if parts.username or parts.password:
        raise ImproperlyConfigured(
            "STORAGE_URL must not carry credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead"
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = set(query) - _QUERY_KEYS
    if unknown:
        raise ImproperlyConfigured(f"STORAGE_URL has unknown options {sorted(unknown)}; known: {sorted(_QUERY_KEYS)}")
    options = {"bucket_name": parts.netloc, "location": parts.path.strip("/")}
    if "endpoint" in query:
        endpoint = query["endpoint"][-1]
        if urlsplit(endpoint).scheme not in ("http", "https"):
            raise ImproperlyConfigured(f"STORAGE_URL's endpoint must be an http(s) URL, got {endpoint!r}")
        options["endpoint_url"] = endpoint
    if "region" in query:
        options["region_name"] = query["region"][-1]
    if "addressing" in query:
        style = query["addressing"][-1]
        if style not in ("path", "virtual"):
            raise ImproperlyConfigured(f"STORAGE_URL's addressing must be path or virtual, got {style!r}")
        options["addressing_style"] = style
    return {"BACKEND": BUCKET_BACKEND, "OPTIONS": options}
