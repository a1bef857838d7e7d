"""A user's API tokens end when their password changes and when they are
deactivated: whoever changes a password after a leak expects every way in
made with the old one to close, scripts included, as Django ends the
other sessions.

Caught on the user's save, whichever path changed it (the password page,
the admin, `manage.py changepassword`, set_password() then save()): the
stored row is read first and compared. Two saves are not changes: one that
names neither field (update_fields=["last_login"] at every log-in), and
one of the password alone, which is how Django's check_password() stores
the same password hashed again with newer parameters at a log-in (a
Django upgrade must not cut every script off). A password written with a
queryset update() is not seen."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import pre_save
from django.dispatch import receiver

from tokens.models import ApiToken

WATCHED = frozenset({"password", "is_active"})
REHASH = frozenset({"password"})


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="tokens.revocation")
def revoke_on_password_change_or_deactivation(sender, instance, raw=False, using=None, update_fields=None, **kwargs):
    if raw or instance.pk is None:
        return
    if update_fields is not None and (not WATCHED & update_fields or update_fields == REHASH):
        return
    before = get_user_model().objects.using(using).filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    if before["password"] != instance.password or (before["is_active"] and not instance.is_active):
        ApiToken.objects.using(using).filter(user_id=instance.pk).delete()
