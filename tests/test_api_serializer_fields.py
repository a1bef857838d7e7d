"""The input serializers make their fields afresh from the declared ones'
arguments (cheaper than DRF's deep copy): same fields, none shared."""

import copy

import pytest
from rest_framework import serializers

from api.fields import MAX_EXPIRES_IN
from api.serializers import (
    ShareCreateSerializer,
    ShareReactivateSerializer,
    ShareUpdateSerializer,
)

pytestmark = pytest.mark.django_db  # the file field's repr shows its QuerySet


@pytest.mark.parametrize("serializer_class", [ShareCreateSerializer, ShareUpdateSerializer, ShareReactivateSerializer])
def test_fields_are_drfs_copies_and_not_shared(serializer_class):
    first, second = serializer_class(), serializer_class()
    drf = copy.deepcopy(serializer_class._declared_fields)

    assert {name: repr(field) for name, field in first.get_fields().items()} == {
        name: repr(field) for name, field in drf.items()
    }
    for name, field in first.fields.items():
        assert field is not second.fields[name]
        assert field is not serializer_class._declared_fields[name]
        assert type(field) is type(drf[name])
    first.fields["max_downloads"].required = True
    assert second.fields["max_downloads"].required is False
    assert serializer_class._declared_fields["max_downloads"].required is False


def test_a_field_made_afresh_validates_as_drfs_copy():
    ours = ShareCreateSerializer(data={"file": "x", "expires_in": "1.5", "max_downloads": 0, "password": 5})
    theirs = ShareCreateSerializer(data={"file": "x", "expires_in": "1.5", "max_downloads": 0, "password": 5})
    theirs.get_fields = lambda: copy.deepcopy(ShareCreateSerializer._declared_fields)
    ours.fields["file"].get_queryset = theirs.fields["file"].get_queryset = lambda: None

    assert not ours.is_valid()
    assert not theirs.is_valid()
    assert ours.errors == theirs.errors
    assert isinstance(ours.fields["password"], serializers.CharField)


def test_the_largest_lifetime_the_schema_allows_is_a_400_not_an_overflow(alice_client, make_file, alice):
    stored = make_file(alice)
    for seconds in (MAX_EXPIRES_IN, MAX_EXPIRES_IN + 1, 86_400_000_000_000):
        response = alice_client.post("/api/shares/", {"file": stored.pk, "expires_in": seconds}, format="json")
        assert response.status_code == 400, seconds
        assert "expires_in" in response.json()
