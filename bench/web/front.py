"""nginx in front of gunicorn for the offload scenarios: the deployment's
configuration (microcloud/nginx_front.py, the text docs/deployment.md shows)
plus one location where nginx serves a file itself, the offload's yardstick."""

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from microcloud import nginx_front
from microcloud.nginx_front import find_nginx

__all__ = ["NGINX_STATIC_PREFIX", "find_nginx", "nginx"]

NGINX_STATIC_PREFIX = "/nginx-static/"


def static_location(static_root: Path) -> str:
    return f"        location {NGINX_STATIC_PREFIX} {{\n            alias {static_root}/;\n        }}\n"


@contextlib.contextmanager
def nginx(
    nginx_path: str, work: Path, port: int, media_root: Path, upstream: str, *, static_root: Path | None = None
) -> Iterator[subprocess.Popen]:
    """The deployment's nginx until the block ends; with `static_root`, its
    files are served directly under NGINX_STATIC_PREFIX (no app involved)."""
    extra = static_location(static_root) if static_root is not None else ""
    with nginx_front.nginx(nginx_path, work, port, media_root, upstream, extra_locations=extra) as process:
        yield process
