from django.apps import AppConfig

from collect.signals import request_created
from expiry.notify import ask_for_pickup, notify_daemons
from sharing.signals import share_schedule_changed
from uploads.signals import upload_created


class ExpiryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "expiry"
    verbose_name = "Expiry daemon"

    def ready(self):
        share_schedule_changed.connect(notify_daemons, dispatch_uid="expiry.notify")
        # An upload's deadline: the daemons read it at their next pick-up, now.
        upload_created.connect(lambda **kwargs: ask_for_pickup(), dispatch_uid="expiry.notify_uploads", weak=False)
        request_created.connect(lambda **kwargs: ask_for_pickup(), dispatch_uid="expiry.notify_requests", weak=False)
