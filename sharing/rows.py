"""Model instances from plain SELECTs, their values converted as the ORM would.

On the API's hot paths the ORM spends far longer building and compiling a
query than the database spends answering it: measured on SQLite, the token
lookup of every API request took 390 us through
`Token.objects.select_related("user").get(key=key)` and 68 us as the same
SELECT run here (the policy read, 270 us against ~30 us). The few statements
run on every request are therefore written out; everything else stays ORM.

Values go through the same converters the ORM applies (the backend's, then
the field's), so a datetime comes back aware on SQLite, a duration as a
timedelta, a boolean as a bool, on every backend.
"""

import functools

from django.db import connections, models
from django.db.models.signals import post_save, pre_save

_statements: dict[tuple, str] = {}


def statement(connection, build, *args) -> str:
    """The SQL `build(connection, *args)` writes, built once per kind of
    connection (its class: its quoting, its features), not per call:
    quoting every name anew cost ~60 calls a share created."""
    key = (type(connection), build, *args)
    sql = _statements.get(key)
    if sql is None:
        sql = _statements[key] = build(connection, *args)
    return sql


def where_sql(queryset: models.QuerySet) -> tuple[str, list]:
    """The WHERE condition of `queryset` as SQL and its parameters, its
    columns qualified by the model's table: for a statement written out
    that must ask a rule the ORM states."""
    query = queryset.query
    sql, params = query.get_compiler(queryset.db).compile(query.where)
    return sql, list(params)


def fetch_one(connection, sql: str, params: list) -> tuple | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def columns(connection, alias: str, model: type[models.Model]) -> str:
    """The SELECT list of every concrete field of `model`, in field order, from table `alias`."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(field.column)}" for field in model._meta.concrete_fields)


def instance(connection, model: type[models.Model], values) -> models.Model:
    """`model` from `values` read in columns() order, as the ORM would build it from its own query."""
    converted = list(values)
    for position, field, column in _read_columns(model):
        value = converted[position]
        if value is not None:
            for converter in connection.ops.get_db_converters(column) + field.get_db_converters(connection):
                value = converter(value, column, connection)
            converted[position] = value
    return model.from_db(connection.alias, _attnames(model), converted)


def field_reader(connection, model: type[models.Model], attname: str):
    """A function turning one value of `model.attname` as `connection`
    returns it into what the ORM would give (a plain SELECT's column)."""
    field = model._meta.get_field(attname)
    column = field.cached_col
    converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)

    def read(value):
        for converter in converters:
            value = converter(value, column, connection)
        return value

    return read


@functools.cache
def _read_columns(model: type[models.Model]) -> tuple:
    table = model._meta.db_table
    return tuple((position, field, field.get_col(table)) for position, field in enumerate(model._meta.concrete_fields))


@functools.cache
def _attnames(model: type[models.Model]) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


def insert_skipping_save(instance: models.Model, using: str) -> None:
    """INSERT `instance` as save(force_insert=True) would, and set its id,
    WITHOUT calling save() and so without pre_save and post_save, unless a
    receiver listens to either for this model: then save() runs, signals and
    all (a receiver added later is never bypassed; tests/test_rows.py).

    What the ORM's save() costs over the statement (~0.3 ms a row on the
    create path, against ~50 us) is compiling the INSERT. A value the
    database must compute (an expression, db_default) goes through save()
    itself too."""
    model = type(instance)
    if pre_save.has_listeners(model) or post_save.has_listeners(model):
        instance.save(force_insert=True, using=using)
        return
    connection = connections[using]
    meta = instance._meta
    fields = _inserted_fields(meta)
    values = [field.pre_save(instance, True) for field in fields]
    if any(hasattr(value, "resolve_expression") for value in values):
        instance.save(force_insert=True, using=using)
        return
    sql = statement(connection, _insert_sql, model)
    returning = connection.features.can_return_columns_from_insert
    with connection.cursor() as cursor:
        cursor.execute(
            sql, [field.get_db_prep_save(value, connection) for field, value in zip(fields, values, strict=True)]
        )
        pk = cursor.fetchone()[0] if returning else connection.ops.last_insert_id(cursor, meta.db_table, meta.pk.column)
    setattr(instance, meta.auto_field.attname, pk)
    instance._state.adding = False
    instance._state.db = using


def _inserted_fields(meta) -> list:
    return [field for field in meta.concrete_fields if field is not meta.auto_field]


def _insert_sql(connection, model: type[models.Model]) -> str:
    quote, meta = connection.ops.quote_name, model._meta
    fields = _inserted_fields(meta)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    if connection.features.can_return_columns_from_insert:
        sql += f" RETURNING {quote(meta.auto_field.column)}"
    return sql
