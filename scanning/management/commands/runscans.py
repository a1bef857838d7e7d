import logging

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scanning.worker import ScanThread, ScanWorker
from workers.checks import WorkerChecks
from workers.stop import WorkerStop

logger = logging.getLogger("scanning")


class Command(WorkerChecks, BaseCommand):
    help = (
        "Scan stored files for malware with clamd (CLAMD_URL), as they arrive. Any number may run: each file "
        "is claimed by one worker at a time, and one killed mid-scan is replaced after SCAN_CLAIM_SECONDS. "
        "Stop it with SIGTERM or Ctrl-C: it finishes the scan in hand and exits 0."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--once", action="store_true", help="Scan every file due now, print how many, and exit 0 (for cron)."
        )

    def handle(self, *args, once=False, **options):
        if not settings.CLAMD_URL:
            raise CommandError("CLAMD_URL is not set: scanning is off.")
        worker = ScanWorker()
        if once:
            count = 0
            while worker.run_once():
                count += 1
            self.stdout.write(
                f"Scanned {count} files ({worker.infected} infected, {worker.failed} failed tries to retry)."
            )
            return
        thread = ScanThread(worker)
        with WorkerStop(thread.stop) as stopper:
            with stopper.shielded():
                thread.start()
            logger.info("runscans started (clamd at %s)", settings.CLAMD_URL)
            stopper.wait_for(thread)
        logger.info(
            "runscans stopped: %d scanned, %d infected, %d failed tries", worker.scanned, worker.infected, worker.failed
        )
        self.stdout.write("Done.")
