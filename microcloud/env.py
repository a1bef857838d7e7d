"""Tiny helpers that read typed settings from the environment.

Each helper takes an explicit default and raises ImproperlyConfigured on a
value it cannot parse, so a typo in a deployment fails at start-up, not later.
"""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def envint(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def envfloat(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEVELOPMENT_SECRET_KEY = "django-insecure-microcloud-development-key-change-me"


def secret_key(debug: bool, default_file: str | os.PathLike | None = None) -> str:
    """SECRET_KEY, or the content of the file SECRET_KEY_FILE names. With
    SECRET_KEY_FILE unset, `default_file` when it exists (the var/secret_key
    that `make run` writes, so manage.py works in that checkout too); set but
    empty, no file. With no key, the development key under DEBUG and a
    refusal to start otherwise."""
    key = os.environ.get("SECRET_KEY", "").strip()
    path = os.environ.get("SECRET_KEY_FILE")
    if path is None and default_file is not None and os.path.exists(default_file):
        path = os.fspath(default_file)
    path = (path or "").strip()
    if not key and path:
        try:
            with open(path, encoding="utf-8") as handle:
                key = handle.read().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"SECRET_KEY_FILE {path!r} cannot be read: {exc.strerror}") from None
        if not key:
            raise ImproperlyConfigured(f"SECRET_KEY_FILE {path!r} is empty")
    if key:
        return key
    if debug:
        return DEVELOPMENT_SECRET_KEY
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. Set SECRET_KEY (or SECRET_KEY_FILE, a file holding it) to a long random "
        "value, e.g. the output of: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'. "
        "`make run` creates var/secret_key, which is used when neither is set; DEBUG=true falls back to a "
        "development key."
    )
