from django.apps import AppConfig


class SigninConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "signin"
    verbose_name = "Sign-in"

    def ready(self):
        from signin import sessions  # noqa: F401 (connects its receiver)
