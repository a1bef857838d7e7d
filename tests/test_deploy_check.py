"""`manage.py check --deploy` passes with the environment of a real deployment.

Runs in a subprocess so the settings module is imported afresh with that
environment, exactly as a production server would import it.
"""

import os
import secrets
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

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
    base = {key: value for key, value in os.environ.items() if key not in {*PRODUCTION_ENV, "SECRET_KEY"}}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "microcloud.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_deploy_check_passes_with_production_settings():
    result = run_deploy_check({**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(50)})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output
    assert "System check identified no issues (0 silenced)." in output


def test_deploy_check_flags_the_development_secret_key():
    result = run_deploy_check(PRODUCTION_ENV)  # no SECRET_KEY: the built-in fallback
    assert result.returncode != 0
    assert "security.W009" in result.stderr
