"""A file id in a request, looked up among the requesting user's files only."""

from django.db import connections, router
from rest_framework import serializers

from sharing import rows
from sharing.models import StoredFile


class OwnFileField(serializers.PrimaryKeyRelatedField):
    """A file id, looked up among the requesting user's files only.

    Someone else's file gets the same answer as a missing one, so ids do not
    reveal what other users store.
    """

    def get_queryset(self):
        return StoredFile.objects.filter(owner=self.context["request"].user)

    def to_internal_value(self, data):
        """DRF's get_queryset().get(pk=data), with the same answers for the
        same input, as one plain SELECT of the id (the ORM's cost ~0.3 ms a
        share created). The file comes back with only id and owner_id loaded:
        sharing a file needs no more (another field would be read on use)."""
        if isinstance(data, bool):
            self.fail("incorrect_type", data_type=type(data).__name__)
        pk_field = StoredFile._meta.pk
        try:
            pk = pk_field.get_prep_value(data)  # int(data), as the ORM's lookup makes it
        except (TypeError, ValueError):
            self.fail("incorrect_type", data_type=type(data).__name__)
        owner_id = self.context["request"].user.pk
        connection = connections[router.db_for_read(StoredFile)]
        low, high = connection.ops.integer_field_range(pk_field.get_internal_type())
        row = None
        if low <= pk <= high:  # beyond, the ORM finds nothing without asking
            row = rows.fetch_one(connection, rows.statement(connection, _own_file_sql), [pk, owner_id])
        if row is None:
            self.fail("does_not_exist", pk_value=data)
        return StoredFile.from_db(connection.alias, [pk_field.attname, "owner_id", "size"], [row[0], owner_id, row[1]])


class OwnFilesField(serializers.ListField):
    """A list of file ids, each looked up as OwnFileField does. What is wrong
    with an item is said in one flat list of messages, each naming the item
    ("Item 2: ..."), the shape every other field's errors have."""

    def run_child_validation(self, data):
        try:
            return super().run_child_validation(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            raise serializers.ValidationError(
                [
                    f"Item {int(index) + 1}: {message}"
                    for index, messages in sorted(exc.detail.items(), key=lambda item: int(item[0]))
                    for message in messages
                ]
            ) from None


def _own_file_sql(connection) -> str:
    quote, meta = connection.ops.quote_name, StoredFile._meta
    return (
        f"SELECT {quote(meta.pk.column)}, {quote(meta.get_field('size').column)} FROM {quote(meta.db_table)} "
        f"WHERE {quote(meta.pk.column)} = %s AND {quote(meta.get_field('owner').column)} = %s"
    )
