from django.core.management.base import BaseCommand, CommandError

from backups.taking import BackupRefused, take_backup


class Command(BaseCommand):
    help = (
        "Back up the service into DEST (a new or empty folder): the database as of one instant "
        "(SQLite; on PostgreSQL take a pg_dump beside it), manifest.json listing the stored files, "
        "and with --files their bytes, checked against their sha256."
    )

    def add_arguments(self, parser):
        parser.add_argument("dest", help="a folder that does not exist yet, or is empty")
        parser.add_argument("--files", action="store_true", help="copy the files' bytes too (into DEST/files/)")

    def handle(self, *args, dest, files, **options):
        try:
            manifest = take_backup(dest, copy_bytes=files)
        except BackupRefused as refusal:
            raise CommandError(str(refusal)) from None
        states = [entry.bytes for entry in manifest.entries]
        self.stdout.write(
            f"Backed up into {dest}: database {manifest.database}, {len(states)} files listed, "
            f"{states.count('copied')} copied, {states.count('missing')} deleted meanwhile."
        )
        if manifest.database == "pg_dump":
            self.stdout.write("PostgreSQL: keep a dump beside it: pg_dump --format=custom --file=DEST/db.dump ...")
