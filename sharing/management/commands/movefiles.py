from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from sharing.catalogue import StoredFiles
from storage.moving import BUCKET, DISK, Mover, Tally


class Command(BaseCommand):
    help = (
        "Copy every stored file's bytes from the local disk (MEDIA_ROOT) to the bucket STORAGE_URL names "
        "(--to bucket), or back (--to disk), under the same names, so the database needs no change. Each copy "
        "is read back and checked against the file's SHA-256. Safe to run while the service runs and to run "
        "again after an interruption: files already copied are skipped, files uploaded meanwhile are left for "
        "the next run. Prints a summary; exits non-zero if any file failed."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--to",
            required=True,
            choices=[BUCKET, DISK],
            help="Where the bytes go: 'bucket' copies them from MEDIA_ROOT to the bucket STORAGE_URL names, "
            "'disk' from that bucket to MEDIA_ROOT. STORAGE_URL must be set either way.",
        )
        parser.add_argument(
            "--verify-existing",
            action="store_true",
            help="Read back every file the target already holds with the right size and copy it again unless "
            "its SHA-256 matches (without this option the size is trusted).",
        )
        parser.add_argument(
            "--delete-source",
            action="store_true",
            help="Remove each file's source bytes once its copy is verified (off by default). Only while the "
            "service reads from the target, or is stopped: it would no longer find them.",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="List the files that would be copied, and those missing from the source, without copying, "
            "deleting or changing anything.",
        )

    def handle(self, *args, to, verify_existing, delete_source, dry_run, **options):
        progress = ProgressLine(self.stderr) if self.stderr.isatty() else None
        try:
            mover = Mover.to(
                to,
                catalogue=StoredFiles(),
                verify_existing=verify_existing,
                delete_source=delete_source,
                dry_run=dry_run,
                report=progress.interrupt(self.stderr.write) if progress else self.stderr.write,
                listed=progress.interrupt(self.stdout.write) if progress else self.stdout.write,
                progress=progress.show if progress else lambda tally: None,
            )
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from error
        try:
            tally = mover.run()
        except KeyboardInterrupt:
            tally = None
        if progress:
            progress.clear()
        self.stdout.write(("dry run: " if dry_run else "") + mover.tally.summary(dry_run=dry_run))
        if tally is None:
            raise CommandError("interrupted: run it again to go on where it stopped", returncode=130)
        if tally.failed:
            raise CommandError(f"{tally.failed} files failed to move (listed above)", returncode=1)


class ProgressLine:
    """One line on a terminal, redrawn in place after each file."""

    def __init__(self, stream):
        self.stream = stream
        self.shown = False

    def show(self, tally: Tally) -> None:
        self.stream.write(
            f"\r{tally.done_files}/{tally.total_files} files, "
            f"{human(tally.done_bytes)} of {human(tally.total_bytes)}\x1b[K",
            ending="",
        )
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K", ending="")
            self.stream.flush()
            self.shown = False

    def interrupt(self, write):
        """`write`, first clearing the line so a message does not end up
        inside it; the next file redraws it."""

        def cleared(line: str) -> None:
            self.clear()
            write(line)

        return cleared


def human(size: float) -> str:
    unit = "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{size} B" if unit == "B" else f"{size:.1f} {unit}"
