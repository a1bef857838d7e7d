from django.core.management.base import BaseCommand, CommandError

from backups.restoring import RestoreRefused, restore_backup


class Command(BaseCommand):
    help = (
        "Restore a backup made by `manage.py backup` into an empty state (no users, files or shares; "
        "the store without its files): the database (SQLite; on PostgreSQL pg_restore it first into a "
        "new database) and the files' bytes, each checked against the manifest."
    )

    def add_arguments(self, parser):
        parser.add_argument("src", help="the backup's folder")

    def handle(self, *args, src, **options):
        try:
            manifest = restore_backup(src)
        except RestoreRefused as refusal:
            raise CommandError(str(refusal)) from None
        copied = sum(entry.bytes == "copied" for entry in manifest.entries)
        self.stdout.write(
            f"Restored the backup of {manifest.taken_at}: {len(manifest.entries)} files listed, "
            f"{copied} files' bytes restored."
        )
