from django.apps import AppConfig


class RatelimitConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ratelimit"
    verbose_name = "Rate limits"
