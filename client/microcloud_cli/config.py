"""Where the server and the token come from: MICROCLOUD_URL and
MICROCLOUD_TOKEN first, else what `microcloud login` saved in the user's
config directory (a file only its owner can read: the token is a key)."""

import json
import os
from dataclasses import dataclass
from pathlib import Path

from microcloud_cli.errors import Failure


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "microcloud"


def state_dir() -> Path:
    """Where unfinished uploads are remembered between runs."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "microcloud"


def config_file() -> Path:
    return config_dir() / "config.json"


@dataclass(frozen=True)
class Account:
    url: str
    token: str


def saved() -> dict:
    try:
        return json.loads(config_file().read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise Failure(f"cannot read {config_file()}: {error}") from None


def server_url(given: str | None = None) -> str:
    url = given or os.environ.get("MICROCLOUD_URL") or saved().get("url")
    if not url:
        raise Failure("no server: set MICROCLOUD_URL or run `microcloud login --url URL`")
    return url.rstrip("/")


def account() -> Account:
    url = server_url()
    token = os.environ.get("MICROCLOUD_TOKEN") or saved().get("token")
    if not token:
        raise Failure("no token: set MICROCLOUD_TOKEN or run `microcloud login`")
    return Account(url=url, token=token)


def save(url: str, token: str) -> Path:
    """Write the config readable by its owner only, replacing any earlier one
    in one rename (never a moment with the token world-readable)."""
    folder = config_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = config_file()
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"url": url, "token": token}, out)
    os.replace(temporary, path)
    return path
