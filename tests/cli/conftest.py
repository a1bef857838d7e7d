"""The `microcloud` command's fixtures: gunicorn on the test database (and
the test's bucket, if it has one), and an environment with a token of
alice's and a home of its own."""

import pytest

from tests.cli.commands import environment
from tests.helpers import free_port, start_web, stop, storage_env, wait_for_port


@pytest.fixture
def server(tmp_path, settings):
    port = free_port()
    # The file bytes where this test's are: its disk, or its bucket when it
    # asked for one (bucket_storage) before this fixture.
    web = start_web(port, tmp_path / "web.log", workers=1, threads=4, **storage_env(settings.MEDIA_ROOT))
    try:
        wait_for_port(port, 30, web)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(web)


@pytest.fixture
def env(tmp_path, server, alice):
    return environment(tmp_path / "home", server, alice)
