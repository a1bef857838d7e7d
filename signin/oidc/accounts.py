"""The account here of the identity the provider vouched for: found by its
username, made at the first sign-in when OIDC_CREATE_USERS is on, its email
and roles brought up to date at every sign-in."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils.translation import gettext_lazy as _

from signin.oidc.claims import Identity, roles_for
from signin.oidc.refusals import AccountRefused


def account_for(identity: Identity):
    User = get_user_model()
    user = User.objects.filter(username=identity.username).first()
    if user is None:
        if not settings.OIDC_CREATE_USERS:
            raise AccountRefused(
                _("There is no account here for %(username)s. Ask an administrator to make one.")
                % {"username": identity.username}
            )
        try:
            with transaction.atomic():
                # No password: this account signs in through the provider.
                user = User.objects.create_user(identity.username, email=identity.email)
        except IntegrityError:
            # A second sign-in of the same new user made it first.
            user = User.objects.get(username=identity.username)
    if not user.is_active:
        raise AccountRefused(_("This account is disabled here."), detail=f"user {user.pk} is not active")
    changed = {name: value for name, value in roles_for(identity.groups).items() if getattr(user, name) != value}
    if identity.email and identity.email != user.email:
        changed["email"] = identity.email
    if changed:
        # Only the fields this sign-in changes: an administrator disabling
        # the account meanwhile is not undone (and its session then ends).
        User.objects.filter(pk=user.pk).update(**changed)
        for name, value in changed.items():
            setattr(user, name, value)
    return user
