from django.apps import AppConfig


class ExpiryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "expiry"
    verbose_name = "Expiry daemon"

    def ready(self):
        from expiry import notify  # noqa: F401  (connects the NOTIFY sender)
