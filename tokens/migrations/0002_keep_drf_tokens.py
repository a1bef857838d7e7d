"""The tokens DRF's authtoken handed out keep working: each one's digest is
stored as a token of ours, then its plain key is deleted."""

import hashlib

from django.db import migrations

NAME = "API token (made before named tokens)"


def keep_drf_tokens(apps, schema_editor):
    drf_token = apps.get_model("authtoken", "Token")
    api_token = apps.get_model("tokens", "ApiToken")
    using = schema_editor.connection.alias
    old = drf_token.objects.using(using)
    api_token.objects.using(using).bulk_create(
        api_token(user_id=user_id, name=NAME, digest=hashlib.sha256(key.encode()).hexdigest(), created_at=created)
        for key, user_id, created in old.values_list("key", "user_id", "created").iterator()
    )
    old.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("tokens", "0001_initial"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    # Backwards the digests stay (a key cannot be had back from one).
    operations = [migrations.RunPython(keep_drf_tokens, migrations.RunPython.noop)]
