"""Finding a share by its link's token, with its files: the first query of
every public link request (one row per file, in order; one row with no file
when all were deleted).

Written out once per database and turned into model instances with
Model.from_db, as the ORM would: compiling the select_related query cost
more CPU than running it, on the path every download takes.
"""

from functools import cache

from django.db import connections

from sharing import backends
from sharing.models.files import StoredFile
from sharing.models.items import ShareItem
from sharing.models.shares import Share
from sharing.rows import statement


def share_by_token(token: str, using: str = "default") -> Share | None:
    """The share whose token is `token`, its files attached (none when all
    were deleted), or None when there is no such share."""
    connection = connections[using]
    with backends.for_connection(connection).plain_cursor(connection) as cursor:
        cursor.execute(statement(connection, _statement), [token])
        rows = cursor.fetchall()
    if not rows:
        return None
    share_names, file_names = _columns()
    share_values = _converted(connection, Share, rows[0][: len(share_names)])
    share = Share.from_db(using, share_names, share_values)
    files = []
    for row in rows:
        file_values, position = row[len(share_names) : -1], row[-1]
        if file_values[0] is not None:
            stored = StoredFile.from_db(using, file_names, _converted(connection, StoredFile, file_values))
            stored.position_in_share = position
            files.append(stored)
    share.attach_files(files)
    return share


@cache
def _columns() -> tuple[list[str], list[str]]:
    return (
        [field.attname for field in Share._meta.concrete_fields],
        [field.attname for field in StoredFile._meta.concrete_fields],
    )


def _statement(connection) -> str:
    quote = connection.ops.quote_name
    share_names, file_names = _columns()
    selected = [f"s.{quote(name)}" for name in share_names] + [f"f.{quote(name)}" for name in file_names]
    selected.append("i.position")
    return (
        f"SELECT {', '.join(selected)} FROM {quote(Share._meta.db_table)} s "
        f"LEFT JOIN {quote(ShareItem._meta.db_table)} i ON i.share_id = s.id "
        f"LEFT JOIN {quote(StoredFile._meta.db_table)} f ON f.id = i.file_id WHERE s.token = %s ORDER BY i.position"
    )


def _converted(connection, model, values) -> list:
    """Apply the database's converters (SQLite returns datetimes as text)
    and the fields' own from_db_value, as a query would."""
    converted = list(values)
    for index, col, converters in _converters(connection.alias, model):
        for converter in converters:
            converted[index] = converter(converted[index], col, connection)
    return converted


@cache
def _converters(using: str, model) -> list:
    connection = connections[using]
    found = []
    for index, field in enumerate(model._meta.concrete_fields):
        col = field.cached_col
        converters = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
        if converters:
            found.append((index, col, converters))
    return found
