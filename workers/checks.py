"""The system checks a background worker runs as it starts: every tag but
urls.

A worker (runexpiry, runwebhooks) serves no URL and never resolves one
(webhook payloads and mails have none), but checking the URLconf imports
it, and with it every view, DRF's API stack and drf-spectacular: ~15 MB of
PSS a daemon would keep for nothing (docs/benchmarks.md, "Memory"). When
tags are given Django leaves out the untagged checks too (auth's
middleware order: the web's alone). `manage.py check` and `migrate` (make
run's, before the service starts) check the URLconf, and gunicorn imports
it as it starts (--preload).
"""

from django.core.checks.registry import Tags, registry


class WorkerChecks:
    """A management command mix-in: its system checks are a worker's."""

    def get_check_kwargs(self, options):
        return {"tags": sorted(registry.tags_available() - {Tags.urls})}
