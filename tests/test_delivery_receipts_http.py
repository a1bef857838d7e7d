"""Delivery receipts over real TCP: gunicorn serves a 50 MiB file, curl
downloads it through a relay that cuts the connection (both sides reset)
once 30 % of the answer has passed, then resumes it with -C -.

The cut download's receipt must stop within a socket buffer of the cut (the
relay's kernel buffers hold 64 KiB each way; the server's own socket buffer,
megabytes, never left the machine and must not count) and read "stopped at
30 %" on the owner's page; its resume reads "completed". With and without a
download limit: the limited link settles its responses (the exact path),
the other records the receipt alone (the quick path)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sharing.models import Share, ShareEvent
from tests.helpers import report, wait_until
from tests.test_resume_tools import (  # data and servers: fixtures
    SIZE,
    MiB,
    cut_after,
    data,  # noqa: F401
    path_of,
    run,
    servers,  # noqa: F401
    tool,
    url_of,
)

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

CUT_AT = 30 * SIZE // 100
# What may lie between the cut and what the server saw go: the relay's
# receive buffer and what was in flight on loopback.
SOCKET_BUFFER = 1 * MiB


def receipts(share: Share) -> list[ShareEvent]:
    return list(share.events.filter(kind=ShareEvent.Kind.DELIVERED).order_by("id"))


@pytest.mark.parametrize("limit", [None, 1], ids=["without a limit", "with a limit"])
def test_a_download_cut_at_30_percent_reads_stopped_at_30_and_its_resume_completed(
    servers,  # noqa: F811
    data,  # noqa: F811
    alice,
    alice_web,
    make_file,
    tmp_path,
    capsys,
    limit,
):
    curl = tool("curl")
    stored = make_file(alice, name="big.bin", data=data, content_type="application/octet-stream")
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=limit)
    out = tmp_path / "big.bin"
    port, cut = cut_after(servers[0], CUT_AT)

    broken = run([curl, "-sS", "-o", str(out), f"http://127.0.0.1:{port}{path_of(share)}"])
    assert cut.is_set()
    assert broken.returncode != 0, broken.stderr
    kept = out.stat().st_size
    assert wait_until(lambda: len(receipts(share)) == 1, 30, interval=0.05), "the cut response never closed"
    (stopped,) = receipts(share)
    until = stopped.details["until"]
    assert stopped.details["whole"] is False
    assert kept <= until <= CUT_AT + SOCKET_BUFFER, (kept, until)

    resumed = run([curl, "-sS", "-f", "-C", "-", "-o", str(out), url_of(servers[-1], share)])
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes() == data
    assert wait_until(lambda: len(receipts(share)) == 2, 30, interval=0.05), "the resume never closed"
    completed = receipts(share)[1]
    assert (completed.details["from"], completed.details["until"]) == (kept, SIZE)

    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    assert '<strong>Downloaded</strong> <span class="detail">stopped at 30 %' in page
    assert '<strong>Resumed</strong> <span class="detail">completed' in page
    report(
        capsys,
        f"receipt of a download cut at 30 % ({'limit 1' if limit else 'no limit'})",
        cut_at=CUT_AT,
        curl_kept=kept,
        receipt_until=until,
        beyond_the_cut=until - CUT_AT,
        beyond_what_curl_kept=until - kept,
    )
