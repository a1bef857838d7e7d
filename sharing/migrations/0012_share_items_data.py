"""Every existing share holds its file as its first and only item, with
its size as one copy's bytes and as its smallest file's. A migration of its
own, between the schema (0011) and dropping Share.file (0013), in either
direction: on PostgreSQL rows written here leave deferred foreign-key checks
pending until the transaction commits, and a table with pending trigger
events cannot be altered in the same transaction."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("sharing", "0011_share_items"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[
                "INSERT INTO sharing_shareitem (share_id, file_id, position) "
                "SELECT id, file_id, 1 FROM sharing_share WHERE file_id IS NOT NULL",
                "UPDATE sharing_share SET size = "
                "(SELECT f.size FROM sharing_storedfile f WHERE f.id = sharing_share.file_id) "
                "WHERE file_id IS NOT NULL",
                "UPDATE sharing_share SET least = size",
            ],
            reverse_sql=[
                "UPDATE sharing_share SET file_id = (SELECT i.file_id FROM sharing_shareitem i "
                "WHERE i.share_id = sharing_share.id ORDER BY i.position LIMIT 1)",
            ],
        ),
    ]
