"""The expiry statement as the daemon runs it thousands of times a second:
what it leaves alone, and that SQLite prepares it once."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from sharing.models import Share, expire_shares
from tests.helpers import create_share

pytestmark = pytest.mark.django_db(transaction=True)

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's statement and pages")


def test_an_expiry_leaves_updated_at_alone(shared_file):
    """updated_at is the last write of an owner or admin; the pick-up index
    over it is then untouched by every expiry."""
    share = create_share(shared_file, 0.5)  # ahead enough to be created on a loaded machine
    written = share.updated_at
    now = timezone.now() + timedelta(seconds=1)
    assert expire_shares([share.pk], now) == [share.pk]
    share.refresh_from_db()
    assert (share.status, share.ended_at, share.updated_at) == (Share.Status.EXPIRED, now, written)


def test_the_pick_up_index_covers_every_row():
    index = next(index for index in Share._meta.indexes if index.name == "share_updated_idx")
    assert (index.fields, index.condition) == (["updated_at"], None)


@sqlite_only
def test_batches_of_any_size_run_one_statement_text(shared_file):
    """The ids go in as one JSON array: a list of placeholders made each
    batch size a statement of its own, parsed again."""
    shares = [create_share(shared_file, 0.5) for _ in range(6)]
    now = timezone.now() + timedelta(seconds=1)
    connection.ensure_connection()
    seen = []
    connection.connection.set_trace_callback(seen.append)
    try:
        for batch in ([shares[0].pk], [s.pk for s in shares[1:3]], [s.pk for s in shares[3:]]):
            assert sorted(expire_shares(batch, now)) == sorted(batch)
    finally:
        connection.connection.set_trace_callback(None)
    updates = [sql for sql in seen if sql.startswith("UPDATE")]
    assert len(updates) == 3
    # The trace shows the values bound: each batch is one JSON text, not a list of values.
    assert [update.count("json_each('[") for update in updates] == [1, 1, 1]
    assert all(" NOT INDEXED " in update for update in updates)


@sqlite_only
def test_new_sqlite_databases_have_2_kib_pages():
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_size")
        assert cursor.fetchone()[0] == 2048
