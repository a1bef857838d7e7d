"""Email notices are written in the deployment's LANGUAGE_CODE: the daemon
that sends them has no reader whose browser could say otherwise, and the
language of whatever request happens to be active on the thread never leaks
into them."""

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.utils import translation
from freezegun import freeze_time

from notices.mail import notify_first_download, send_reminder, time_left
from sharing.models import Share, ShareItem
from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def two_day_share(shared_file):
    with freeze_time(T0):
        yield Share.create_for(file=shared_file, expires_at=T0 + timedelta(days=2), notify_first_download=True)


def test_a_french_deployment_sends_french_reminders(settings, two_day_share):
    settings.LANGUAGE_CODE = "fr"
    with freeze_time(T0):
        assert send_reminder(two_day_share.pk)
    (message,) = mail.outbox
    assert message.subject == "Votre lien vers report.txt expire dans 2\u00a0jours" or (
        message.subject == "Votre lien vers report.txt expire dans 2 jours"
    )
    body = message.body
    assert body.startswith("Bonjour alice,\n")
    assert f"votre lien vers «\u00a0report.txt\u00a0» (partage {two_day_share.pk}) expire le\n" in body
    assert "2026-03-03 12:00 UTC, dans environ 2 jours." in body
    assert "Il a été téléchargé 0 fois." in body
    assert "prolongez-le d’ici là dans l’application web ou par l’API" in body
    assert "remind_before_expiry" in body  # a setting's name stays as the API spells it
    for english in ("Hello", "your link", "expires", "downloaded"):
        assert english not in body


def test_a_french_deployment_sends_french_first_download_notices(settings, two_day_share):
    settings.LANGUAGE_CODE = "fr"
    settings.SITE_URL = "https://files.example.com/"
    Share.objects.filter(pk=two_day_share.pk).update(download_count=1)  # as a counted download leaves it
    with freeze_time(T0):
        assert notify_first_download(two_day_share.pk)
    (message,) = mail.outbox
    assert message.subject == "Votre lien vers report.txt a été téléchargé"
    assert "vient d’être\ntéléchargé pour la première fois." in message.body
    assert "Il expire le 2026-03-03 12:00 UTC." in message.body
    assert "Vos liens\u00a0: https://files.example.com/" in message.body


def test_an_english_deployment_writes_english_even_inside_a_french_request(settings, two_day_share):
    settings.LANGUAGE_CODE = "en"
    with freeze_time(T0), translation.override("fr"):
        assert send_reminder(two_day_share.pk)
    (message,) = mail.outbox
    assert message.subject == "Your link to report.txt expires in 2 days"
    assert message.body.startswith("Hello alice,\n")
    assert "It has been downloaded 0 times." in message.body


def test_a_notice_for_a_deleted_file_names_it_in_the_deployments_language(settings, two_day_share):
    settings.LANGUAGE_CODE = "fr"
    ShareItem.objects.filter(share=two_day_share).delete()
    with freeze_time(T0):
        assert send_reminder(two_day_share.pk)
    assert mail.outbox[0].subject.startswith("Votre lien vers un fichier supprimé expire dans")


@pytest.mark.parametrize(
    ("left", "english", "french"),
    [
        (timedelta(hours=24), "24 hours", "24 heures"),
        (timedelta(hours=1, minutes=10), "1 hour", "1 heure"),
        (timedelta(days=3), "3 days", "3 jours"),
        (timedelta(seconds=5), "1 minute", "1 minute"),
        (timedelta(minutes=30), "30 minutes", "30 minutes"),
    ],
)
def test_time_left_in_both_languages(left, english, french):
    with translation.override("en"):
        assert time_left(left) == english
    with translation.override("fr"):
        assert time_left(left) == french


def test_language_code_is_read_from_the_environment_and_checked():
    def check(value: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", "from django.conf import settings; print(settings.LANGUAGE_CODE)"],
            cwd=REPO_ROOT,
            env={
                "PATH": "/usr/bin:/bin",
                "DJANGO_SETTINGS_MODULE": "microcloud.settings",
                "SECRET_KEY": "k" * 50,
                "LANGUAGE_CODE": value,
            },
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert check("fr").stdout.strip() == "fr"
    assert check(" FR ").stdout.strip() == "fr"
    refused = check("de")
    assert refused.returncode != 0
    assert "LANGUAGE_CODE must be one of en, fr, got 'de'" in refused.stderr
