"""Settings that guard the hardening: where SECRET_KEY comes from, and limits
that could never allow anything are refused at start-up, not with a 500
on every request."""

import shutil
import subprocess

import pytest
from django.core.exceptions import ImproperlyConfigured

from microcloud.env import secret_key
from tests.helpers import REPO_ROOT, run_manage


def manage(*args: str, cwd=REPO_ROOT, **env: str) -> subprocess.CompletedProcess:
    return run_manage(*args, cwd=cwd, **env)


def test_the_key_file_make_run_wrote_is_used_when_no_variable_names_one(tmp_path, monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("SECRET_KEY_FILE", raising=False)
    (tmp_path / "secret_key").write_text("k" * 50 + "\n")
    assert secret_key(False, default_file=tmp_path / "secret_key") == "k" * 50
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY is not set"):
        secret_key(False, default_file=tmp_path / "absent")
    monkeypatch.setenv("SECRET_KEY_FILE", "")  # set but empty: no file at all
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY is not set"):
        secret_key(False, default_file=tmp_path / "secret_key")
    monkeypatch.setenv("SECRET_KEY", "from-the-environment")
    assert secret_key(False, default_file=tmp_path / "secret_key") == "from-the-environment"


def test_manage_py_works_in_a_checkout_where_make_run_wrote_the_key(tmp_path):
    """README: after `make run`, `.venv/bin/python manage.py createsuperuser`
    (or any command) works in that checkout without setting anything."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    # Copies of manage.py (Python puts the real folder of a linked script on
    # sys.path) and of the settings package, so BASE_DIR is this folder; the
    # apps and the packages below them are links.
    shutil.copy(REPO_ROOT / "manage.py", checkout)
    shutil.copytree(REPO_ROOT / "microcloud", checkout / "microcloud", ignore=shutil.ignore_patterns("__pycache__"))
    for app in REPO_ROOT.iterdir():
        # every package of the project, however many there are
        if (app / "__init__.py").exists() and app.name not in {"microcloud", "tests"}:
            (checkout / app.name).symlink_to(app)
    (checkout / "var").mkdir(mode=0o700)
    (checkout / "var" / "secret_key").write_text("s" * 50 + "\n")
    result = manage("check", cwd=checkout)
    assert result.returncode == 0, result.stderr
    (checkout / "var" / "secret_key").unlink()
    result = manage("check", cwd=checkout)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LOGIN_ATTEMPTS_PER_ADDRESS", "0"),
        ("LOGIN_FAILURES_PER_USERNAME", "-1"),
        ("LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS", "0"),
        ("LINK_RATE_LIMIT", "0"),
        ("NUM_PROXIES", "-1"),
    ],
)
def test_a_limit_that_allows_nothing_stops_start_up_naming_the_variable(name, value):
    result = manage("check", SECRET_KEY="k" * 50, **{name: value})
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {name} must be at least" in result.stderr
