"""Debian's nginx in front of a real gunicorn, as docs/deployment.md
configures it (microcloud.nginx_front), for the tests that need the proxy."""

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from microcloud import nginx_front as front
from tests.browser.helpers import is_true
from tests.helpers import free_port, start_web, stop, wait_for_port


@contextlib.contextmanager
def nginx_before_gunicorn(
    tmp_path: Path, media_root: str, *, extra_locations: str = "", workers: int = 1, **env: str
) -> Iterator[int]:
    """Yield nginx's port; gunicorn (`workers` x 4 threads, settings `env`)
    behind it. Without nginx the test skips, or fails under CI."""
    nginx_path = front.find_nginx()
    if nginx_path is None:
        if is_true(os.environ.get("CI")):
            pytest.fail("nginx is required under CI (apt-get install -y nginx)")
        pytest.skip("nginx is not installed (apt-get install -y nginx)")
    web_port, nginx_port = free_port(), free_port()
    web = start_web(web_port, tmp_path / "web.log", workers=workers, threads=4, MEDIA_ROOT=media_root, **env)
    try:
        wait_for_port(web_port, 30, web)
        with front.nginx(
            nginx_path,
            tmp_path / "nginx",
            nginx_port,
            Path(media_root),
            f"127.0.0.1:{web_port}",
            extra_locations=extra_locations,
        ):
            yield nginx_port
    finally:
        stop(web)
