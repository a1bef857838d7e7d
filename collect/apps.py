from django.apps import AppConfig


class CollectConfig(AppConfig):
    """Upload requests: links that let anyone holding them send files to their owner."""

    name = "collect"
    verbose_name = "Upload requests"

    def ready(self):
        from collect import receivers  # noqa: F401  (connects the uploads app's signals)
