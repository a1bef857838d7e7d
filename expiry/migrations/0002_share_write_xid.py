"""PostgreSQL only: stamp each share write with its transaction id.

The daemon's pick-up safety net reads the active shares written since its
last look. A time watermark (updated_at) misses a transaction that commits
long after it read its clock, or across a clock step; a transaction id does
not: every transaction still running when the daemon last looked has an id
at or above that snapshot's xmin, and every later one a higher id
(expiry.store.ShareStore.load_changed). The column is filled by a trigger,
so writers that bypass the model (bulk loads, SQL) are covered too; it is
not a model field, because SQLite needs no such thing: there, writes hold
the database's write lock from reading their clock to their commit.
"""

from django.db import migrations

FORWARD = [
    "ALTER TABLE sharing_share ADD COLUMN write_xid bigint",
    """
    CREATE FUNCTION sharing_share_stamp_write_xid() RETURNS trigger AS $$
    BEGIN
        NEW.write_xid := pg_current_xact_id()::text::bigint;
        RETURN NEW;
    END
    $$ LANGUAGE plpgsql
    """,
    # Only writes that can change the schedule; download counting stays untouched.
    """
    CREATE TRIGGER sharing_share_stamp_write_xid
    BEFORE INSERT OR UPDATE OF expires_at, status ON sharing_share
    FOR EACH ROW EXECUTE FUNCTION sharing_share_stamp_write_xid()
    """,
    # runexpiry's pick-up on PostgreSQL: active shares written since its last look.
    "CREATE INDEX share_active_write_xid_idx ON sharing_share (write_xid) WHERE status = 'active'",
]
BACKWARD = [
    "DROP TRIGGER IF EXISTS sharing_share_stamp_write_xid ON sharing_share",
    "DROP FUNCTION IF EXISTS sharing_share_stamp_write_xid()",
    "DROP INDEX IF EXISTS share_active_write_xid_idx",
    "ALTER TABLE sharing_share DROP COLUMN IF EXISTS write_xid",
]


def run(statements):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("expiry", "0001_initial"),
        ("sharing", "0001_initial"),
    ]

    operations = [migrations.RunPython(run(FORWARD), run(BACKWARD))]
