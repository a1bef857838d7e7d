"""A share holds one file or several: Share.file becomes ShareItem rows
(every existing share keeps its file as its first and only one);
Share.size keeps one copy's bytes for the byte budget, Share.least its
smallest file's (less than that left, a limited link is used up)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sharing", "0010_storage_quotas"),
    ]

    operations = [
        migrations.AddField(
            model_name="share",
            name="size",
            field=models.PositiveBigIntegerField(
                db_default=0, default=0, editable=False, help_text="Bytes of one copy: its files' sizes added up."
            ),
        ),
        migrations.AddField(
            model_name="share",
            name="least",
            field=models.PositiveBigIntegerField(
                db_default=0,
                default=0,
                editable=False,
                help_text="Bytes of its smallest file: a limited link whose budget holds less is used up.",
            ),
        ),
        migrations.CreateModel(
            name="ShareItem",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("position", models.PositiveIntegerField()),
                (
                    "file",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="share_items", to="sharing.storedfile"
                    ),
                ),
                (
                    "share",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="items", to="sharing.share"
                    ),
                ),
            ],
            options={
                "ordering": ["share", "position"],
                "constraints": [
                    models.UniqueConstraint(fields=("share", "position"), name="share_item_position_unique"),
                    models.UniqueConstraint(fields=("share", "file"), name="share_item_file_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("position__gte", 1)), name="share_item_position_positive"
                    ),
                ],
            },
        ),
    ]
