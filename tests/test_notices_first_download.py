"""The first-download notice: claimed once after a counted download closed
(so it can say whether the recipient got all of it),
sent by the mail worker thread, however many downloads race; and the email
settings through the API."""

import logging
from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from notices.mail import time_left
from notices.worker import MailWorker, default_worker
from sharing.models import Share
from tests.helpers import in_threads

transactional = pytest.mark.django_db(transaction=True)


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def downloaded(response):
    """Read a download to its end and close it: the notice goes once the
    first download's response has closed, with its receipt."""
    if response.streaming:
        b"".join(response.streaming_content)
    response.close()
    return response


def sent_mail() -> list:
    assert default_worker().flush(10), "the mail worker did not finish"
    return list(mail.outbox)


@transactional
def test_the_first_download_is_notified_once(shared_file, alice):
    share = share_of(shared_file, notify_first_download=True)
    client = Client()
    assert downloaded(client.get(f"/s/{share.token}")).status_code == 200

    (message,) = sent_mail()
    assert message.to == [alice.email]
    assert message.subject == "Your link to report.txt was downloaded"
    assert f"share {share.pk}" in message.body
    assert share.token not in message.body  # a live link is not mailed around
    assert Share.objects.get(pk=share.pk).first_download_notified_at is not None

    assert downloaded(client.get(f"/s/{share.token}")).status_code == 200
    assert len(sent_mail()) == 1


@transactional
def test_a_range_from_a_later_byte_is_no_first_download(shared_file):
    """Only a response from byte 0 starts a download; a part of the file
    fetched from further on neither counts one nor sends the notice."""
    share = share_of(shared_file, notify_first_download=True)
    response = Client().get(f"/s/{share.token}", HTTP_RANGE="bytes=5-")
    assert response.status_code == 206
    b"".join(response.streaming_content)
    assert sent_mail() == []
    share.refresh_from_db()
    assert (share.total_downloads, share.first_download_notified_at) == (0, None)
    assert downloaded(Client().get(f"/s/{share.token}", HTTP_RANGE="bytes=0-4")).status_code == 206
    assert len(sent_mail()) == 1


@transactional
def test_no_notice_unless_asked(shared_file):
    share = share_of(shared_file)
    assert share.count_download()
    assert sent_mail() == []
    assert Share.objects.get(pk=share.pk).first_download_notified_at is None


@transactional
def test_concurrent_first_downloads_send_one_notice(shared_file):
    share = share_of(shared_file, notify_first_download=True)

    def download():
        return Share.objects.get(pk=share.pk).count_download()

    assert in_threads(download, 8) == [True] * 8
    assert len(sent_mail()) == 1
    assert Share.objects.get(pk=share.pk).total_downloads == 8  # counted in the row or, once notified, pending


@transactional
def test_concurrent_claims_of_one_notice_send_it_once(shared_file):
    """Many workers (processes) claiming at once: the UPDATE's row count decides."""
    from notices.mail import notify_first_download

    share = share_of(shared_file, notify_first_download=True)
    Share.objects.filter(pk=share.pk).update(download_count=1)  # counted, notice not yet claimed
    results = in_threads(lambda: notify_first_download(share.pk), 6)
    assert sorted(results) == [False] * 5 + [True]
    assert len(mail.outbox) == 1


@transactional
def test_a_rolled_back_download_sends_nothing(shared_file):
    from django.db import transaction

    share = share_of(shared_file, notify_first_download=True)

    def download_then_fail():
        with transaction.atomic():
            assert share.count_download()
            raise RuntimeError("the download's transaction fails")

    with pytest.raises(RuntimeError):
        download_then_fail()
    assert sent_mail() == []


@transactional
def test_an_owner_without_an_address_gets_nothing_and_it_is_logged(shared_file, alice, caplog):
    alice.email = ""
    alice.save()
    share = share_of(shared_file, notify_first_download=True)
    with caplog.at_level(logging.INFO, logger="notices"):
        assert share.count_download()
        assert sent_mail() == []
    assert "has no email address" in caplog.text


@transactional
def test_a_failing_mail_server_is_logged_not_raised(shared_file, settings, caplog):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    share = share_of(shared_file, notify_first_download=True)
    assert downloaded(Client().get(f"/s/{share.token}")).status_code == 200
    assert sent_mail() == []
    assert "first_download notice for share" in caplog.text
    assert "failed" in caplog.text
    # At most once: the claim stands, no retry.
    assert Share.objects.get(pk=share.pk).first_download_notified_at is not None


def test_the_worker_survives_a_failing_job_and_flushes():
    worker, done = MailWorker(name="test-mail"), []

    def fail():
        raise RuntimeError("boom")

    worker.submit(fail)
    worker.submit(done.append, 1)
    assert worker.flush(5)
    assert done == [1]
    assert worker.close(5)


@pytest.mark.parametrize(
    ("left", "text"),
    [
        (timedelta(hours=24), "24 hours"),
        (timedelta(hours=23, minutes=59, seconds=30), "24 hours"),
        (timedelta(days=3), "3 days"),
        (timedelta(hours=1, minutes=10), "1 hour"),
        (timedelta(minutes=30), "30 minutes"),
        (timedelta(seconds=5), "1 minute"),
    ],
)
def test_time_left_reads_naturally(left, text):
    assert time_left(left) == text


# --- the API ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_sets_and_shows_the_email_settings(alice_client, shared_file):
    response = alice_client.post(
        "/api/shares/",
        {"file": shared_file.pk, "expires_in": 3600, "notify_first_download": True, "remind_before_expiry": False},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["notify_first_download"], body["remind_before_expiry"]) == (True, False)
    share = Share.objects.get(pk=body["id"])
    assert (share.notify_first_download, share.remind_before_expiry) == (True, False)

    response = alice_client.patch(f"/api/shares/{share.pk}/", {"remind_before_expiry": True}, format="json")
    assert response.status_code == 200
    assert response.json()["remind_before_expiry"] is True
    assert response.json()["notify_first_download"] is True  # left as it was
    defaults = alice_client.post("/api/shares/", {"file": shared_file.pk}, format="json").json()
    assert (defaults["notify_first_download"], defaults["remind_before_expiry"]) == (False, True)


@pytest.mark.django_db
def test_a_bad_email_setting_is_a_400_naming_it(alice_client, shared_file):
    response = alice_client.post(
        "/api/shares/", {"file": shared_file.pk, "notify_first_download": "perhaps"}, format="json"
    )
    assert response.status_code == 400
    assert "notify_first_download" in response.json()
    assert not Share.objects.exists()


@pytest.mark.django_db
def test_an_ended_share_settings_cannot_change(alice_client, shared_file):
    share = share_of(shared_file)
    share.unshare()
    response = alice_client.patch(f"/api/shares/{share.pk}/", {"notify_first_download": True}, format="json")
    assert response.status_code == 409


@transactional
def test_the_notice_says_whether_the_first_download_arrived_whole(alice, make_file):
    data = bytes(range(256)) * 8192  # 2 MiB: several blocks of a response
    stored = make_file(alice, name="big.bin", data=data, content_type="application/octet-stream")
    share = share_of(stored, notify_first_download=True)
    response = Client().get(f"/s/{share.token}")
    next(iter(response.streaming_content))
    assert sent_mail() == []  # still sending: how far it gets is not known yet
    response.close()  # the recipient went away after 256 KiB

    (message,) = sent_mail()
    assert "The download stopped at 12 % of it; the recipient may still resume it." in message.body

    whole = share_of(stored, notify_first_download=True)
    b"".join(Client().get(f"/s/{whole.token}").streaming_content)
    assert "The recipient received all of it." in sent_mail()[-1].body
