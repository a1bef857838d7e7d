"""Email settings come from the environment (README, Configuration)."""

import json

from tests.helpers import run_manage

SHOW = (
    "import json; from django.conf import settings as s; print(json.dumps([s.EMAIL_BACKEND, s.EMAIL_HOST, "
    "s.EMAIL_PORT, s.EMAIL_HOST_USER, s.EMAIL_HOST_PASSWORD, s.EMAIL_USE_TLS, s.EMAIL_USE_SSL, "
    "s.DEFAULT_FROM_EMAIL, s.SITE_URL]))"
)
EMAIL_VARIABLES = {
    "EMAIL_BACKEND",
    "EMAIL_HOST",
    "EMAIL_PORT",
    "EMAIL_HOST_USER",
    "EMAIL_HOST_PASSWORD",
    "EMAIL_USE_TLS",
    "EMAIL_USE_SSL",
    "DEFAULT_FROM_EMAIL",
    "SITE_URL",
}


def show(**env: str) -> list:
    result = run_manage("shell", "-c", SHOW, drop=EMAIL_VARIABLES, SECRET_KEY="k" * 50, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_console_backend_by_default():
    assert show() == [
        "django.core.mail.backends.console.EmailBackend",
        "localhost",
        25,
        "",
        "",
        False,
        False,
        "microcloud@localhost",
        "",
    ]


def test_smtp_is_configured_from_the_environment():
    env = {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "smtp.example.com",
        "EMAIL_PORT": "587",
        "EMAIL_HOST_USER": "microcloud",
        "EMAIL_HOST_PASSWORD": "pw",
        "EMAIL_USE_TLS": "true",
        "DEFAULT_FROM_EMAIL": "share@example.com",
        "SITE_URL": "https://share.example.com",
    }
    assert show(**env) == [
        "django.core.mail.backends.smtp.EmailBackend",
        "smtp.example.com",
        587,
        "microcloud",
        "pw",
        True,
        False,
        "share@example.com",
        "https://share.example.com",
    ]


def test_tls_and_ssl_together_stop_start_up():
    result = run_manage("check", SECRET_KEY="k" * 50, EMAIL_USE_TLS="true", EMAIL_USE_SSL="true")
    assert result.returncode != 0
    assert "EMAIL_USE_TLS" in result.stderr
