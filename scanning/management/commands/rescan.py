import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scanning.rescans import chosen_files, rescan
from scanning.worker import ScanWorker
from sharing.models import ScanState

BAR = 30


class Command(BaseCommand):
    help = (
        "Scan stored files again (e.g. after a signature update): all of them, some by id, or those in some "
        "scan states. Each is queued, keeps its state until its new verdict, and is scanned here (with a progress "
        "bar) or, with --queue-only, by the running workers. Infected files are left alone. SIGTERM or Ctrl-C "
        "stops after the scan in hand; what is left stays queued for the workers."
    )

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="*", type=int, help="Ids of the files to rescan (default: all).")
        parser.add_argument(
            "--state",
            action="append",
            choices=[state for state in ScanState.values if state != ScanState.INFECTED],
            help="Only files in this scan state (repeat for several).",
        )
        parser.add_argument("--queue-only", action="store_true", help="Queue them for runscans and exit.")

    def handle(self, *args, ids=None, state=None, queue_only=False, **options):
        if not settings.CLAMD_URL:
            raise CommandError("CLAMD_URL is not set: scanning is off.")
        worker = None if queue_only else ScanWorker()
        stopping = []

        def stop(signum, frame):
            stopping.append(signum)

        previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            files = chosen_files(ids=ids, states=state)

            def progress(done: int, total: int) -> None:
                filled = BAR * done // total if total else BAR
                self.stdout.write(f"\r[{'#' * filled}{'.' * (BAR - filled)}] {done}/{total}", ending="")
                self.stdout.flush()
                if stopping:
                    raise KeyboardInterrupt

            try:
                queued, left = rescan(files, worker, progress)
            except KeyboardInterrupt:
                self.stdout.write("\nStopped; the files left stay queued for runscans.")
                return
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        self.stdout.write("")
        if queue_only:
            self.stdout.write(f"Queued {queued} files for runscans.")
        else:
            self.stdout.write(
                f"Rescanned {queued - left} of {queued} files; {left} still queued (clamd out of reach?)."
            )
