"""`manage.py prepare`: what a starting container does before it serves."""

import os

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from deploy.backends import migration_lock


class Command(BaseCommand):
    help = (
        "Apply the migrations and create the first admin user (DJANGO_SUPERUSER_USERNAME and "
        "DJANGO_SUPERUSER_PASSWORD, if set and the user does not exist), under a lock: several "
        "processes starting together migrate once."
    )

    def handle(self, *args, **options):
        with migration_lock():
            call_command("migrate", interactive=False, verbosity=options["verbosity"])
            self.create_admin()

    def create_admin(self) -> None:
        username = os.environ.get("DJANGO_SUPERUSER_USERNAME", "").strip()
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD", "")
        if not (username and password):
            return
        users = get_user_model()
        with transaction.atomic():
            if users.objects.filter(username=username).exists():
                self.stdout.write(f"Admin user {username} exists.")
                return
            email = os.environ.get("DJANGO_SUPERUSER_EMAIL", "admin@localhost")
            users.objects.create_superuser(username=username, email=email, password=password)
        self.stdout.write(f"Created admin user {username}.")
