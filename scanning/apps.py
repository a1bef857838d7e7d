from django.apps import AppConfig


class ScanningConfig(AppConfig):
    name = "scanning"
    verbose_name = "Malware scanning"
