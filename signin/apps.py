from django.apps import AppConfig


class SigninConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "signin"
    verbose_name = "Sign-in"
