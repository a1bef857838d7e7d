from django.apps import AppConfig

from expiry.notify import notify_daemons
from sharing.signals import share_schedule_changed


class ExpiryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "expiry"
    verbose_name = "Expiry daemon"

    def ready(self):
        share_schedule_changed.connect(notify_daemons, dispatch_uid="expiry.notify")
