"""The in-process tests here (the floor view) go through the whole middleware
stack, WhiteNoise included: static files come from a folder of each test's
own, without collectstatic's manifest, as in tests/ (whose conftest.py does
not reach this folder)."""

import pytest


@pytest.fixture(autouse=True)
def plain_static_files(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATIC_ROOT.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
