"""Share.file goes once its ShareItem rows exist (0012, which says why
these are three migrations)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("sharing", "0012_share_items_data"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="share",
            name="file",
        ),
    ]
