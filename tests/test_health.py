"""/healthz and /readyz: JSON, no secrets, a 503 naming what is not ready,
and the expiry daemon seen from a web node through its lease."""

import json

import pytest
from django.db import connection
from django.test import Client

from expiry.service import lease_for
from health import checks
from health.checks import Readiness


@pytest.fixture(autouse=True)
def fresh_answers(monkeypatch):
    """Each test asks again (the answer is kept a second)."""
    monkeypatch.setattr(checks, "readiness", Readiness(fresh_for=0))
    monkeypatch.setattr("health.views.readiness", checks.readiness)


def readyz():
    response = Client().get("/readyz")
    assert response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]
    return response.status_code, json.loads(response.content)


def test_healthz_answers_without_the_database():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "ok"}


@pytest.mark.django_db(transaction=True)
def test_without_a_daemon_it_is_not_ready_and_says_why():
    status, body = readyz()
    assert status == 503
    assert body["status"] == "not ready"
    assert body["checks"]["expiry"]["ok"] is False
    assert {name: body["checks"][name]["ok"] for name in ("database", "migrations", "storage")} == dict.fromkeys(
        ("database", "migrations", "storage"), True
    )
    assert body["checks"]["migrations"]["unapplied"] == 0


@pytest.mark.django_db(transaction=True)
def test_a_daemon_holding_its_lease_makes_it_ready_and_letting_go_does_not():
    lease = lease_for(ttl=5.0)
    assert lease.keep()
    try:
        status, body = readyz()
        assert (status, body["status"], body["checks"]["expiry"]["ok"]) == (200, "ready", True)
        assert body["checks"]["expiry"]["lease"] == ("lock" if connection.vendor == "sqlite" else "row")
    finally:
        lease.release()
    status, body = readyz()
    assert status == 503
    assert body["checks"]["expiry"]["ok"] is False


@pytest.mark.django_db(transaction=True)
def test_a_lapsed_row_lease_is_a_missing_daemon():
    """PostgreSQL's row lease renewed in the past (a crashed holder): missing."""
    clock = [1_000.0]
    lease = lease_for(ttl=5.0, clock=lambda: clock[0])
    if connection.vendor == "sqlite":
        pytest.skip("SQLite's lease is a lock: the kernel lets it go with its holder")
    assert lease.keep()  # lapsed long ago: 1970 plus 1005 s
    status, body = readyz()
    assert status == 503
    assert body["checks"]["expiry"]["ok"] is False


@pytest.mark.django_db(transaction=True)
def test_an_unapplied_migration_is_named_as_such(monkeypatch):
    known = checks.known_migrations() | {("sharing", "9999_not_applied")}
    monkeypatch.setattr(checks, "known_migrations", lambda: known)
    status, body = readyz()
    assert status == 503
    assert body["checks"]["migrations"] == {"ok": False, "unapplied": 1}


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_store_is_not_ready_and_the_answer_holds_no_secret(monkeypatch, settings):
    def out_of_reach(name):
        raise OSError("connect to secret-host.internal:9000 as user s3cr3t failed")

    monkeypatch.setattr(checks.files(), "exists", out_of_reach)
    status, body = readyz()
    assert status == 503
    assert body["checks"]["storage"] == {"ok": False, "error": "OSError"}
    text = json.dumps(body)
    for secret in ("secret-host", "s3cr3t", settings.SECRET_KEY, str(settings.DATABASES["default"]["NAME"])):
        assert secret not in text


def test_the_answer_is_kept_for_a_second_so_polling_costs_little(monkeypatch):
    calls = []
    monkeypatch.setattr(checks, "run_checks", lambda: calls.append(1) or {"database": {"ok": True}})
    now = [100.0]
    readiness = Readiness(clock=lambda: now[0], fresh_for=1.0)
    assert readiness.answer()["status"] == "ready"
    now[0] += 0.5
    readiness.answer()
    assert len(calls) == 1
    now[0] += 0.6
    readiness.answer()
    assert len(calls) == 2
