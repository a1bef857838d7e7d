"""The system checks a background worker runs as it starts: every tag but
urls, templates and admin.

A worker (runexpiry, runwebhooks) serves no URL and never resolves one
(webhook payloads and mails have none), but checking the URLconf imports
it, and with it every view, DRF's API stack and drf-spectacular: ~15 MB of
PSS a daemon would keep for nothing (docs/benchmarks.md, "Memory"). The
template and admin checks load every template engine's libraries, DRF's
among them (its renderers, requests, yaml, pygments): another ~18 MB,
kept by a daemon that renders a template only when it mails a notice. When
tags are given Django leaves out the untagged checks too (auth's
middleware order: the web's alone). `manage.py check` and `migrate` (make
run's, before the service starts) run all of these, and gunicorn imports
the URLconf as it starts (--preload).
"""

from django.core.checks.registry import Tags, registry

# What only the web server uses: its URLs, its pages, its admin.
WEB_ONLY = {Tags.urls, Tags.templates, Tags.admin}


class WorkerChecks:
    """A management command mix-in: its system checks are a worker's."""

    def get_check_kwargs(self, options):
        return {"tags": sorted(registry.tags_available() - WEB_ONLY)}
