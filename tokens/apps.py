from django.apps import AppConfig


class TokensConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tokens"
    verbose_name = "API tokens"

    def ready(self):
        from tokens import revocation  # noqa: F401  (revoke a user's tokens when their password changes)
