"""The API's per-request reads written as plain SELECTs (sharing/rows.py) answer
exactly what the ORM and DRF code they replace answered, on every backend."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Value
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import exceptions, serializers

from api.authentication import TokenAuthentication
from api.own_files import OwnFileField
from api.serializers import ShareCreateSerializer
from sharing import rows
from sharing.models import Share, ShareEvent, SharingPolicy
from tokens.models import ApiToken, digest_of
from tokens.service import issue

pytestmark = pytest.mark.django_db


def fields_of(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


# --- token authentication ---------------------------------------------------------


def our_answer(key):
    try:
        user, token = TokenAuthentication().authenticate_credentials(key)
    except exceptions.AuthenticationFailed as failed:
        return str(failed.detail)
    return fields_of(user), fields_of(token), token.user is user


def orm_answer(key):
    """What the same lookup answers through the ORM, as DRF's own did."""
    token = ApiToken.objects.select_related("user").filter(digest=digest_of(key)).first()
    if token is None:
        return "Invalid token."
    if not token.user.is_active:
        return "User inactive or deleted."
    return fields_of(token.user), fields_of(token), True


def test_token_lookup_answers_as_the_orm(alice, bob):
    alice.last_login = timezone.now() - timedelta(days=1, microseconds=7)
    alice.is_superuser = alice.is_staff = True
    alice.save()
    keys = [issue(alice, name="a")[1], issue(bob, name="b")[1], "not-a-real-token", ""]
    # Inactive by a queryset update: a save would revoke the token (tokens.revocation).
    type(bob).objects.filter(pk=bob.pk).update(is_active=False)

    for key in keys:
        assert our_answer(key) == orm_answer(key)
    assert our_answer(keys[0])[0]["last_login"] == alice.last_login
    assert our_answer(keys[1]) == "User inactive or deleted."


def test_a_request_with_a_token_costs_one_query(alice):
    key = issue(alice, name="script")[1]
    request = RequestFactory().get("/api/shares/", HTTP_AUTHORIZATION=f"Bearer {key}")

    with CaptureQueriesContext(connection) as queries:
        user, _ = TokenAuthentication().authenticate(request)

    assert user.pk == alice.pk
    assert user.is_authenticated
    assert len(queries) == 1


# --- the file of a new share ------------------------------------------------------


def validate_file(user, data, method):
    request = RequestFactory().post("/api/shares/")
    request.user = user
    serializer = ShareCreateSerializer(context={"request": request})
    field = serializer.fields["file"]
    try:
        stored = method(field, data)
    except serializers.ValidationError as refused:
        return refused.detail
    return stored.pk, stored.owner_id


def test_file_ids_are_read_as_drf_reads_them(alice, bob, make_file):
    own, others = make_file(alice), make_file(bob)
    inputs = [own.pk, str(own.pk), f" {own.pk} ", float(own.pk), own.pk + 0.5, others.pk, 999_999, 0, -1]
    inputs += [2**63 - 1, 2**63, -(2**63) - 1, 10**30, 1e300, "abc", "", "1e3", True, False, [own.pk], {"id": 1}]

    for data in inputs:
        ours = validate_file(alice, data, OwnFileField.to_internal_value)
        assert ours == validate_file(alice, data, serializers.PrimaryKeyRelatedField.to_internal_value), data
    assert validate_file(alice, own.pk, OwnFileField.to_internal_value) == (own.pk, alice.pk)


def test_the_file_read_is_enough_to_share_it(alice_client, alice, make_file):
    stored = make_file(alice)

    with CaptureQueriesContext(connection) as queries:
        response = alice_client.post("/api/shares/", {"file": stored.pk, "expires_in": 60}, format="json")

    assert response.status_code == 201
    assert response.json()["file"] == stored.pk
    # No lazy read of the file's other columns, nor of its owner.
    assert not [query for query in queries if "auth_user" in query["sql"] or '"name"' in query["sql"]]


# --- the sharing policy -----------------------------------------------------------


def orm_policy():
    return SharingPolicy.objects.filter(pk=SharingPolicy.SINGLETON_ID).first() or SharingPolicy(pk=1)


def test_policy_reads_as_the_orm_reads_it():
    assert fields_of(SharingPolicy.current()) == fields_of(orm_policy())  # no row: the defaults

    SharingPolicy.objects.create(
        default_lifetime=timedelta(hours=2, microseconds=5),
        max_lifetime=timedelta(days=400),
        ended_retention=timedelta(seconds=1),
        reminder_lead=None,
    )
    assert fields_of(SharingPolicy.current()) == fields_of(orm_policy())
    assert SharingPolicy.current().default_lifetime == timedelta(hours=2, microseconds=5)
    assert SharingPolicy.current()._state.adding is False


def test_a_policy_change_applies_to_the_next_read():
    SharingPolicy.objects.create(max_lifetime=timedelta(days=30))
    assert SharingPolicy.current().max_lifetime == timedelta(days=30)

    SharingPolicy.objects.filter(pk=1).update(max_lifetime=timedelta(days=31))

    assert SharingPolicy.current().max_lifetime == timedelta(days=31)


# --- inserts ----------------------------------------------------------------------


def test_an_insert_stores_what_save_stores(alice, make_file):
    stored = make_file(alice)
    now = timezone.now()

    def rows_of(insert):
        share = Share(
            size=stored.size, least=stored.size, owner_id=alice.pk, expires_at=now + timedelta(hours=1), max_downloads=3
        )
        share.start_budget()
        share.created_at = share.updated_at = now
        insert(share)
        event = ShareEvent(
            share_id=share.pk,
            kind=ShareEvent.Kind.DOWNLOADED,
            at=now,
            lateness=timedelta(milliseconds=1.5),
            bytes=100,
            client_address="192.0.2.0",
            details={"max_downloads": [None, 3], "password": "set"},
        )
        insert(event)
        assert share._state.adding is False
        assert event._state.db == "default"
        read = [fields_of(Share.objects.get(pk=share.pk)), fields_of(ShareEvent.objects.get(pk=event.pk))]
        for values, instance in zip(read, [share, event], strict=True):
            assert values["id"] == instance.pk
            del values["id"]
        del read[0]["token"]
        del read[1]["share_id"]
        return read

    assert rows_of(lambda instance: rows.insert_skipping_save(instance, using="default")) == rows_of(
        lambda instance: instance.save()
    )


def test_a_value_the_database_computes_goes_through_save(alice, make_file):
    stored = make_file(alice)
    share = Share(
        size=stored.size, least=stored.size, owner_id=alice.pk, expires_at=timezone.now() + timedelta(hours=1)
    )
    share.notify_first_download = Value(True)

    rows.insert_skipping_save(share, using="default")

    assert Share.objects.get(pk=share.pk).notify_first_download is True
