from django.apps import AppConfig


class NoticesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "notices"
    verbose_name = "Email notices"

    def ready(self):
        from notices import receivers  # noqa: F401  (connects the first-download notice)
