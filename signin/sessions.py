"""Whose session lives: a user disabled (is_active set false, in the admin
or anywhere a user is saved) is signed out at their next page load, and
their links keep working or end as DISABLED_USERS_LINKS says. Their API
tokens go in tokens/revocation.py, on the same save.

Django's ModelBackend (and every backend here that extends it) already
refuses an inactive user when a request's session names them, so the
request is anonymous; that alone would bring the session back if the user
were enabled again. The middleware below ends such a session for good."""

from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user_model
from django.db.models.signals import pre_save
from django.dispatch import receiver

from sharing.models import end_owner_shares


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="signin.sessions")
def end_links_of_disabled_user(sender, instance, raw=False, using=None, update_fields=None, **kwargs):
    """Before the save that disables a user: end their links when the
    deployment says so. Before, not after: if ending them fails, the
    user stays as they were rather than disabled with their links live."""
    if raw or instance.pk is None or instance.is_active or settings.DISABLED_USERS_LINKS != "end":
        return
    if update_fields is not None and "is_active" not in update_fields:
        return
    was_active = get_user_model().objects.using(using).filter(pk=instance.pk, is_active=True).exists()
    if was_active:
        end_owner_shares(instance.pk)


def has_session_cookie(request) -> bool:
    return settings.SESSION_COOKIE_NAME in request.COOKIES


class EndRefusedSessionsMiddleware:
    """After AuthenticationMiddleware: a session that names a user no
    backend lets in any more (disabled, or deleted) is flushed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Without a session cookie there is no session to end; looking would
        # mark every response Vary: Cookie (a public link's download too).
        if not has_session_cookie(request):
            return self.get_response(request)
        if SESSION_KEY in request.session and not request.user.is_authenticated:
            request.session.flush()
        return self.get_response(request)
