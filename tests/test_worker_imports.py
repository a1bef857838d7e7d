"""What the background workers import: not the URLconf, whose views, DRF
API stack and drf-spectacular would cost each ~15 MB of PSS, nor the
template libraries and API serializers, another ~18 MB (workers.checks,
webhooks.payloads). The probe runs `manage.py <command>` in a fresh
interpreter, as manage.py does (system checks included), with the command's
work stubbed out, and prints which of the watched modules it imported."""

import json
import subprocess
import sys

import pytest

from expiry.management.commands.runexpiry import Command as RunExpiry
from tests.helpers import REPO_ROOT, subprocess_env
from webhooks.management.commands.runwebhooks import Command as RunWebhooks

URLCONF_MODULES = ["microcloud.urls", "drf_spectacular.views", "web.views"]
# What the template and admin checks load (every template library, DRF's
# renderers among them), and the API's serializers a webhook payload needs.
DRF_STACK = ["rest_framework.renderers", "api.representations"]
WORKERS = [("expiry", "runexpiry"), ("webhooks", "runwebhooks"), ("scanning", "runscans")]

# The command's handle() stubbed out: what is measured is its import and its
# system checks, which is all it loads before it starts working. With
# all_checks, its get_check_kwargs() is BaseCommand's (every check).
PROBE = """
import json, sys
import django
from django.core.management import BaseCommand, execute_from_command_line, load_command_class
django.setup()
command = type(load_command_class({app!r}, {name!r}))
command.handle = lambda self, *args, **options: None
if {all_checks}:
    command.get_check_kwargs = BaseCommand.get_check_kwargs
execute_from_command_line(["manage.py", {name!r}])
print(json.dumps([name for name in {watched!r} if name in sys.modules]))
"""


def imported_by(app: str, name: str, all_checks: bool = False) -> list[str]:
    code = PROBE.format(app=app, name=name, all_checks=all_checks, watched=URLCONF_MODULES + DRF_STACK)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("app", "name"), WORKERS)
def test_a_worker_starts_without_importing_the_urlconf(app, name):
    assert imported_by(app, name) == []


@pytest.mark.parametrize(("app", "name"), WORKERS)
def test_with_every_system_check_it_would_import_the_urlconf(app, name):
    # The probe sees the import when there is one: the URL checks load it.
    assert imported_by(app, name, all_checks=True) == URLCONF_MODULES + DRF_STACK


@pytest.mark.parametrize("command", [RunExpiry, RunWebhooks])
def test_a_worker_runs_every_tag_of_system_checks_but_the_webs(command):
    tags = set(command().get_check_kwargs({})["tags"])
    assert not {"urls", "templates", "admin"} & tags
    assert {"models", "database", "security", "staticfiles", "caches"} <= tags
