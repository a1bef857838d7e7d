"""Every way a share can have ended, read by everyone who reads it: the API,
the public link (GET and HEAD), the recipient's landing page, and the
owner's dashboard (as rendered and as its live updates). They must all
tell the same story, so each state's expected words are written out here
once, independently of the code that maps states to words."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from scanning import queue
from scanning.quarantine import quarantine
from sharing.models import EndState, ScanState, Share, StoredFile, delete_file, expire_shares, reactivate

# state: (API status, API end_reason, link status, recipient's line, owner's sentence)
EXPECTED = {
    "live": ("active", None, 200, None, ""),
    "reactivated": ("active", None, 200, None, ""),
    "expired by time, not yet recorded": ("expired", None, 410, "This link has expired.", "Expired at"),
    "expired by time, recorded": ("expired", "expired", 410, "This link has expired.", "Expired at"),
    "ended by its download limit": (
        "expired",
        "download_limit",
        410,
        "This link has been downloaded as many times as its sender allowed.",
        "Download limit reached at",
    ),
    "at its download limit, not yet recorded": (
        "expired",
        None,
        410,
        "This link has been downloaded as many times as its sender allowed.",
        "Download limit reached",
    ),
    "unshared": ("unshared", "unshared", 410, "This link has been unshared.", "Unshared at"),
    "file deleted": (
        "unshared",
        "file_deleted",
        410,
        "The shared file is no longer available.",
        "Unshared when its file was deleted at",
    ),
    "infected": (
        "unshared",
        "infected",
        410,
        "This link has ended: malware was found in its file.",
        "Ended: malware was found in a file at",
    ),
}
# What the owner's "Time left" reads once a share ended: what happened, not
# "expired" for a link that ended another way.
TIME_LEFT = {
    "live": "",
    "reactivated": "",
    "expired by time, not yet recorded": "Expired",
    "expired by time, recorded": "Expired",
    "ended by its download limit": "Downloaded as often as allowed",
    "at its download limit, not yet recorded": "Downloaded as often as allowed",
    "unshared": "Unshared",
    "file deleted": "File deleted",
    "infected": "Malware found",
}
FATE = {
    "live": EndState.LIVE,
    "reactivated": EndState.LIVE,
    "expired by time, not yet recorded": EndState.EXPIRED,
    "expired by time, recorded": EndState.EXPIRED,
    "ended by its download limit": EndState.DOWNLOAD_LIMIT,
    "at its download limit, not yet recorded": EndState.DOWNLOAD_LIMIT,
    "unshared": EndState.UNSHARED,
    "file deleted": EndState.FILE_DELETED,
    "infected": EndState.INFECTED,
}


def past_its_deadline(share: Share) -> Share:
    """Move a share's life an hour back, so its deadline has passed."""
    now = timezone.now()
    Share.objects.filter(pk=share.pk).update(created_at=now - timedelta(hours=2), expires_at=now - timedelta(hours=1))
    share.refresh_from_db()
    return share


def make(state: str, stored) -> Share:
    share = Share.create_for(
        file=stored,
        expires_at=timezone.now() + timedelta(hours=1),
        max_downloads=1 if "download limit" in state else None,
    )
    if state in ("expired by time, not yet recorded", "expired by time, recorded"):
        past_its_deadline(share)
        if state == "expired by time, recorded":
            assert expire_shares([share.pk], timezone.now()) == [share.pk]
    elif state == "ended by its download limit":
        assert share.count_download()
    elif state == "at its download limit, not yet recorded":
        # A whole copy reserved and never settled (the worker died mid-send).
        assert share.reserve_bytes(first=0, end=stored.size) is not None
    elif state == "unshared":
        assert share.unshare()
    elif state == "file deleted":
        assert delete_file(stored) == 1
    elif state == "infected":
        StoredFile.objects.filter(pk=stored.pk).update(scan_state=ScanState.PENDING, scan_due_at=timezone.now())
        claim, claimed = queue.claim_next("test", timezone.now())
        assert quarantine(claim, claimed, "Eicar-Test", timezone.now())
    elif state == "reactivated":
        assert share.unshare()
        reactivate(share, timezone.now() + timedelta(hours=1))
    share.refresh_from_db()
    return share


@pytest.mark.parametrize("state", list(EXPECTED))
def test_every_reader_of_a_share_agrees_on_what_happened_to_it(state, alice, alice_client, alice_web, make_file):
    api_status, end_reason, link_status, recipient_line, owner_sentence = EXPECTED[state]
    share = make(state, make_file(alice))
    assert share.fate().state == FATE[state]

    # The API: the share itself, and the list filtered by that status.
    shown = alice_client.get(f"/api/shares/{share.pk}/").json()
    assert (shown["status"], shown["end_reason"]) == (api_status, end_reason)
    listed = alice_client.get("/api/shares/", {"status": api_status}).json()["results"]
    assert [row["id"] for row in listed] == [share.pk]

    # The public link, as a script fetches it (GET and HEAD).
    link = f"/s/{share.token}"
    got = Client().get(link)
    assert got.status_code == link_status
    if recipient_line is not None:
        # Its first sentence; a link at its download limit adds its budget.
        assert got.content.decode().startswith(recipient_line)
        assert got.content.decode().endswith("\n")
    assert Client().head(link).status_code == link_status

    # The recipient's page, as a browser opens it.
    page = Client().get(link, headers={"Accept": "text/html"})
    assert page.status_code == link_status
    if recipient_line is None:
        assert b"Download" in page.content
    else:
        assert f"<h1>{recipient_line}</h1>" in page.content.decode()

    # The owner's dashboard: the rendered row and the live update agree.
    live = alice_web.get("/shares/live/", {"ids": share.pk}).json()["shares"][str(share.pk)]
    assert live["status"] == api_status
    assert live["live"] is (api_status == "active")
    assert live["ended"].startswith(owner_sentence) if owner_sentence else live["ended"] == ""
    row = alice_web.get("/?status=all").content.decode()
    assert f'data-field="status_label" data-expired-label="Expired">{live["status_label"]}</span>' in row
    ended_at = f' <time class="local-time" datetime="{live["ended_at"]}">{live["ended_when"]}</time>'
    assert f'data-field="ended">{live["ended"]}{ended_at if live["ended_at"] else ""}</small>' in row
    assert live["time_left"] == TIME_LEFT[state]
    if TIME_LEFT[state]:
        assert f'data-ended-text="ended">{TIME_LEFT[state]}</span>' in row


def test_a_live_share_whose_file_row_went_without_ending_it_reads_as_file_deleted(shared_file, alice_client):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    shared_file.delete()  # bypasses delete_file: the share stays active, its file null
    share.refresh_from_db()
    assert share.fate().state == EndState.FILE_DELETED
    assert alice_client.get(f"/api/shares/{share.pk}/").json()["status"] == "unshared"
    assert Client().get(f"/s/{share.token}").content == b"The shared file is no longer available.\n"
