import logging

from django.core.management.base import BaseCommand

from webhooks.worker import DeliveryWorker, WebhookThread
from workers.checks import WorkerChecks
from workers.stop import WorkerStop

logger = logging.getLogger("webhooks")


class Command(WorkerChecks, BaseCommand):
    help = (
        "Send webhook deliveries on their own (runexpiry already does, unless started with --no-webhooks). "
        "Any number may run beside runexpiry daemons: each delivery is claimed by one worker at a time "
        "(SKIP LOCKED on PostgreSQL), and one killed mid-send is replaced after WEBHOOK_CLAIM_SECONDS. "
        "Stop it with SIGTERM or Ctrl-C: it finishes the send in hand and exits 0."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--once", action="store_true", help="Send every delivery due now, print how many, and exit 0 (for cron)."
        )

    def handle(self, *args, once=False, **options):
        worker = DeliveryWorker()
        if once:
            count = 0
            while worker.run_once():
                count += 1
            self.stdout.write(f"Sent {count} deliveries ({worker.sent} delivered, {worker.failed} failed).")
            return
        thread = WebhookThread(worker)
        with WorkerStop(thread.stop) as stopper:
            with stopper.shielded():
                thread.start()
            logger.info("runwebhooks started")
            stopper.wait_for(thread)
        logger.info("runwebhooks stopped: %d delivered, %d failed attempts", worker.sent, worker.failed)
        self.stdout.write("Done.")
