"""Several daemons expiring the same shares: each expiry happens, and is
announced, exactly once. On both databases, with real connections (threads)."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from expiry.idlog import ExpiredIdLog
from expiry.store import ShareStore
from sharing.models import Share
from sharing.signals import shares_expired
from tests.helpers import in_threads


@pytest.fixture
def signalled():
    """The ids every shares_expired signal carried, in order."""
    received, lock = [], threading.Lock()

    def on_expired(sender, share_ids, **kwargs):
        with lock:
            received.extend(share_ids)

    shares_expired.connect(on_expired)
    yield received
    shares_expired.disconnect(on_expired)


@pytest.mark.django_db(transaction=True)
def test_daemons_racing_over_the_same_ids_expire_and_announce_each_share_once(make_shares, signalled):
    ids = sorted(s.pk for s in make_shares(3000, 1))

    def work():
        store, claimed = ShareStore(), []
        for start in range(0, len(ids), 500):
            claimed += store.expire(ids[start : start + 500], time.time() + 5)
        return claimed

    claimed = [share_id for result in in_threads(work, 3) for share_id in result]
    assert sorted(claimed) == ids  # every one, none twice
    assert sorted(signalled) == ids


@pytest.mark.django_db(transaction=True)
def test_the_signal_carries_only_the_ids_the_update_changed(make_shares, signalled):
    due, renewed, unshared = make_shares(3, 1)
    renewed.set_expiry(timezone.now() + timedelta(hours=1))
    unshared.unshare()
    ShareStore().expire([due.pk, renewed.pk, unshared.pk], time.time() + 5)
    assert signalled == [due.pk]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_expiry_is_not_announced(make_shares, signalled):
    (share,) = make_shares(1, 1)

    def expire_then_fail():
        with transaction.atomic():
            ShareStore().expire([share.pk], time.time() + 5)
            raise RuntimeError("the transaction fails after the UPDATE")

    with pytest.raises(RuntimeError):
        expire_then_fail()
    assert signalled == []
    assert Share.objects.get(pk=share.pk).status == Share.Status.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_the_expired_id_log_records_each_id_with_its_ended_at(make_shares, tmp_path):
    shares = make_shares(4, 1)
    log = ExpiredIdLog(str(tmp_path / "expired.log")).connect()
    try:
        ShareStore().expire(sorted(s.pk for s in shares), time.time() + 5)
        ShareStore().expire(sorted(s.pk for s in shares), time.time() + 6)  # nothing left to expire
    finally:
        log.close()
    lines = (tmp_path / "expired.log").read_text().splitlines()
    assert sorted(int(line.split()[0]) for line in lines) == sorted(s.pk for s in shares)
    for share in Share.objects.filter(pk__in=[s.pk for s in shares]):
        (stamp,) = {float(line.split()[1]) for line in lines}
        assert share.ended_at.timestamp() == stamp
