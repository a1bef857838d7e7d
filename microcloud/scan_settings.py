"""The malware scanning settings (docs/scanning.md), read from the
environment; settings.py takes them as they are."""

import os

from django.core.exceptions import ImproperlyConfigured

from microcloud.env import envbool, envfloat, envint

__all__ = [
    "CLAMD_URL",
    "SCAN_ABOVE_MAX",
    "SCAN_CLAIM_SECONDS",
    "SCAN_FAILED_AFTER",
    "SCAN_FAIL_OPEN",
    "SCAN_INFECTED_BYTES",
    "SCAN_MAX_BYTES",
    "SCAN_POLL_INTERVAL",
    "SCAN_RETRY_BASE",
    "SCAN_RETRY_MAX",
    "SCAN_TIMEOUT",
]

# clamd's socket: tcp://host:port or unix:///path/to/clamd.ctl. Empty (the
# default): scanning is off, new files are "unscanned" and served as before.
# With it set, new files wait for `manage.py runscans` (docs/scanning.md).
CLAMD_URL = os.environ.get("CLAMD_URL", "")
if CLAMD_URL and not CLAMD_URL.startswith(("tcp://", "unix://")):
    raise ImproperlyConfigured(f"CLAMD_URL must start with tcp:// or unix://, got {CLAMD_URL!r}")
# Files larger than this are not sent to clamd (keep it at or below clamd's
# StreamMaxLength); they become "too_big", and SCAN_ABOVE_MAX says whether
# such a file is served ("serve") or withheld ("withhold", the default).
SCAN_MAX_BYTES = envint("SCAN_MAX_BYTES", 2 * 1024**3, minimum=1)
SCAN_ABOVE_MAX = os.environ.get("SCAN_ABOVE_MAX", "withhold")
if SCAN_ABOVE_MAX not in ("withhold", "serve"):
    raise ImproperlyConfigured(f"SCAN_ABOVE_MAX must be withhold or serve, got {SCAN_ABOVE_MAX!r}")
# Fail-closed (the default): a file whose scan failed is not served. On: it is.
SCAN_FAIL_OPEN = envbool("SCAN_FAIL_OPEN", False)
# What an infected file's bytes become: "delete" (the default) or "keep"
# (left in the storage for an administrator, never served again).
SCAN_INFECTED_BYTES = os.environ.get("SCAN_INFECTED_BYTES", "delete")
if SCAN_INFECTED_BYTES not in ("delete", "keep"):
    raise ImproperlyConfigured(f"SCAN_INFECTED_BYTES must be delete or keep, got {SCAN_INFECTED_BYTES!r}")
# Seconds clamd may take to answer (a whole file's scan): a worker waits this long.
SCAN_TIMEOUT = envfloat("SCAN_TIMEOUT", 600.0)
# A worker's claim on a file lasts this long (keep it above SCAN_TIMEOUT): a
# worker killed mid-scan is replaced after it.
SCAN_CLAIM_SECONDS = envfloat("SCAN_CLAIM_SECONDS", 900.0)
# Retries while clamd is out of reach: SCAN_RETRY_BASE seconds after the first
# failure, doubling up to SCAN_RETRY_MAX; after SCAN_FAILED_AFTER tries the file
# reads "failed" (and is still retried at SCAN_RETRY_MAX).
SCAN_RETRY_BASE = envfloat("SCAN_RETRY_BASE", 5.0)
SCAN_RETRY_MAX = envfloat("SCAN_RETRY_MAX", 300.0)
SCAN_FAILED_AFTER = envint("SCAN_FAILED_AFTER", 5, minimum=1)
# Seconds between a worker's looks for waiting files when it has none.
SCAN_POLL_INTERVAL = envfloat("SCAN_POLL_INTERVAL", 1.0)
