"""`manage.py check --deploy` passes with the environment of a real deployment.

Runs in a subprocess so the settings module is imported afresh with that
environment, exactly as a production server would import it.
"""

import secrets
import subprocess

from tests.helpers import run_manage

# What a production deployment served over HTTPS sets.
PRODUCTION_ENV = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "share.example.com",
    "HTTPS": "true",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    # Without these two, check --deploy warns (security.W005, security.W021).
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
}


def run_deploy_check(env: dict[str, str]) -> subprocess.CompletedProcess:
    # The caller's environment minus anything settings.py reads that we set,
    # so a developer's DEBUG=true (say) cannot leak into the check.
    return run_manage("check", "--deploy", "--fail-level", "WARNING", drop=set(PRODUCTION_ENV), **env)


def test_deploy_check_passes_with_production_settings():
    result = run_deploy_check({**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(50)})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output
    assert "System check identified no issues (0 silenced)." in output


# An empty SECRET_KEY_FILE means "no file": without it, a checkout where
# `make run` made var/secret_key would find its key there.
NO_KEY = {"SECRET_KEY_FILE": ""}


def test_without_a_secret_key_a_production_server_refuses_to_start():
    result = run_deploy_check({**PRODUCTION_ENV, **NO_KEY})  # no SECRET_KEY, DEBUG off
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in result.stderr
    assert "django-insecure" not in result.stdout + result.stderr


def test_the_key_can_come_from_a_file(tmp_path):
    key_file = tmp_path / "secret_key"
    key_file.write_text(secrets.token_urlsafe(50) + "\n")
    result = run_deploy_check({**PRODUCTION_ENV, "SECRET_KEY_FILE": str(key_file)})
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_unreadable_key_file_is_named(tmp_path):
    result = run_deploy_check({**PRODUCTION_ENV, "SECRET_KEY_FILE": str(tmp_path / "missing")})
    assert result.returncode != 0
    assert "SECRET_KEY_FILE" in result.stderr
    assert "missing" in result.stderr


def test_debug_instances_may_use_the_development_key():
    result = run_deploy_check({"DEBUG": "true", **NO_KEY})
    assert "security.W009" in result.stderr  # still flagged by check --deploy
