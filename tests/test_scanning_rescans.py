"""Rescans, after a signature update: the admin's action and list (state,
filter, the files waiting), and `manage.py rescan` with its progress bar,
against a real clamd (tests.clamd)."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sharing.models import ScanState, StoredFile

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


def set_state(stored: StoredFile, state: str, *, queued: bool = False) -> None:
    StoredFile.objects.filter(pk=stored.pk).update(scan_state=state, scan_due_at=timezone.now() if queued else None)


def test_the_admin_lists_the_scan_state_filters_the_waiting_files_and_rescans(admin_client, alice, make_file):
    clean, waiting, infected = (
        make_file(alice, "clean.txt"),
        make_file(alice, "waiting.txt"),
        make_file(alice, "bad.txt"),
    )
    set_state(clean, ScanState.CLEAN)
    set_state(waiting, ScanState.PENDING, queued=True)
    set_state(infected, ScanState.INFECTED)
    StoredFile.objects.filter(pk=infected.pk).update(scan_signature="Eicar-Test")
    url = reverse("admin:sharing_storedfile_changelist")
    html = admin_client.get(url).content.decode()
    assert "being checked (queued)" in html
    assert "infected: Eicar-Test" in html
    shown = admin_client.get(url, {"scan_queue": "waiting"}).content.decode()
    assert "waiting.txt" in shown
    assert "clean.txt" not in shown
    assert "bad.txt" in admin_client.get(url, {"scan_state__exact": "infected"}).content.decode()

    response = admin_client.post(
        url, {"action": "rescan", "_selected_action": [clean.pk, waiting.pk, infected.pk]}, follow=True
    )
    assert "Queued 1 file for a scan; 2 left alone" in response.content.decode()
    clean.refresh_from_db()
    assert clean.scan_state == ScanState.CLEAN
    assert clean.scan_due_at is not None


@pytest.mark.django_db(transaction=True)
def test_the_rescan_command_scans_the_chosen_files_with_a_progress_bar(clamd, alice, make_file):
    files = [make_file(alice, f"f{n}.txt", f"file {n}\n".encode()) for n in range(4)]
    for stored in files:
        set_state(stored, ScanState.UNSCANNED)
    out = StringIO()
    call_command("rescan", *[str(stored.pk) for stored in files[:3]], stdout=out)
    text = out.getvalue()
    assert "[" + "#" * 30 + "] 3/3" in text
    assert "Rescanned 3 of 3 files; 0 still queued" in text
    states = dict(StoredFile.objects.values_list("name", "scan_state"))
    assert states == {"f0.txt": "clean", "f1.txt": "clean", "f2.txt": "clean", "f3.txt": "unscanned"}

    out = StringIO()
    call_command("rescan", "--state", "unscanned", "--queue-only", stdout=out)
    assert "Queued 1 files for runscans." in out.getvalue()
    assert StoredFile.objects.get(name="f3.txt").scan_due_at is not None


def test_rescan_needs_scanning_on(settings):
    settings.CLAMD_URL = ""
    with pytest.raises(CommandError, match="CLAMD_URL is not set"):
        call_command("rescan")


def test_the_dashboard_shows_a_file_being_checked_and_one_found_infected(alice, alice_web, make_file):
    waiting, infected, clean = make_file(alice, "waiting.txt"), make_file(alice, "bad.txt"), make_file(alice, "ok.txt")
    set_state(waiting, ScanState.PENDING, queued=True)
    set_state(infected, ScanState.INFECTED)
    StoredFile.objects.filter(pk=infected.pk).update(scan_signature="Eicar-Test")
    set_state(clean, ScanState.CLEAN)
    html = alice_web.get("/").content.decode()
    assert 'data-scan-state="pending">being checked for viruses<' in html
    assert "malware found (Eicar-Test): removed" in html
    assert html.count("data-scan-state=") == 2
