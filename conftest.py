"""What every test folder (tests/, bench/tests/) runs under: each test with
its own uploads, rate counters and static files, no request answered with a
500, fast password hashing; and the groups that pytest-xdist keeps together."""

import freezegun
import pytest
from django.test import Client

# pytest's --durations measure real time, also for tests that freeze the clock.
freezegun.configure(extend_ignore_list=["_pytest.timing"])


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    """Groups for pytest-xdist's --dist loadgroup (one worker runs a group's
    tests, one at a time). The fault tests (several processes each, bounded
    in time) form one group: never two at once, beside ordinary tests in the
    other workers. Each benchmark smoke module is a group: its tests read one
    run of the benchmark, made once per worker that runs any of them."""
    for item in items:
        if item.get_closest_marker("fault"):
            item.add_marker(pytest.mark.xdist_group("fault"))
        elif item.get_closest_marker("bench"):
            item.add_marker(pytest.mark.xdist_group(f"bench:{item.module.__name__}"))


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Every test stores uploads in its own temporary folder."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def fresh_rate_limits(settings, tmp_path):
    """Every test counts rate limits from zero, in a file of its own."""
    from ratelimit.counters import reset_shared_counters

    settings.RATELIMIT_SQLITE_PATH = tmp_path / "ratelimit.sqlite3"
    reset_shared_counters()
    yield
    reset_shared_counters()


@pytest.fixture(autouse=True)
def no_server_errors(monkeypatch):
    """Fail any test in which a request is answered with a 500."""
    original = Client.request

    def request(self, **kwargs):
        response = original(self, **kwargs)
        assert response.status_code != 500, (kwargs.get("PATH_INFO"), response.status_code)
        return response

    monkeypatch.setattr(Client, "request", request)


@pytest.fixture(autouse=True)
def plain_static_files(settings, tmp_path):
    """Pages link static files; tests run without collectstatic's manifest."""
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATIC_ROOT.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 costs ~0.4 s a user; tests are not about password strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
