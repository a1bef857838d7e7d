"""postgres_backend: the per-request health check reads the socket first and
asks the server (SELECT 1) only when something may have ended the connection.

Each test uses a connection of its own to the test database (the one the
test runs in is left alone), and reads what the server saw in
pg_stat_activity from another session.
"""

import pytest
from django.db import connection, connections

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def own():
    """A second connection to the test database, through the project's backend."""
    if connection.vendor != "postgresql":
        pytest.skip("the backend is PostgreSQL's")
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def last_query(of) -> str:
    """The last statement the server received from `of`'s session."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [of.connection.info.backend_pid])
        return cursor.fetchone()[0]


def new_request(wrapper) -> None:
    """What Django does at a request's start, then its first query's check."""
    wrapper.close_if_unusable_or_obsolete()
    wrapper.close_if_health_check_failed()


def test_the_project_uses_this_backend(own):
    assert type(own).__module__ == "postgres_backend.base"
    assert own.health_check_enabled, "CONN_HEALTH_CHECKS is what the backend makes cheap"


def test_a_live_idle_connection_passes_without_a_round_trip(own):
    with own.cursor() as cursor:
        cursor.execute("SELECT 'the last query of the previous request'")
    new_request(own)
    assert own.health_check_done
    assert own.connection is not None
    assert last_query(own) == "SELECT 'the last query of the previous request'"


def test_a_connection_the_server_ended_is_replaced_before_the_first_query(own):
    ended_pid = own.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [ended_pid])
        assert cursor.fetchone()[0]
    new_request(own)
    with own.cursor() as cursor:  # would fail with "terminating connection" on the old one
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != ended_pid


def test_a_connection_psycopg_knows_is_closed_goes_to_the_servers_check(own):
    own.connection.close()
    new_request(own)
    assert own.connection is None, "Django's own check found it unusable and dropped it"
    with own.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
