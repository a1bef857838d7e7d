"""The sharing policy: default and maximum lifetimes, one admin-edited row."""

from datetime import UTC, datetime, timedelta

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import connections, models, router
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from sharing import rows


class SharingPolicy(models.Model):
    """The one row of admin-editable sharing rules (defaults without it)."""

    SINGLETON_ID = 1

    default_lifetime = models.DurationField(
        default=timedelta(days=7),
        validators=[MinValueValidator(timedelta(seconds=1))],
        help_text="Lifetime of a share created without expires_in or expires_at.",
    )
    max_lifetime = models.DurationField(
        default=timedelta(days=30),
        validators=[MinValueValidator(timedelta(seconds=1))],
        help_text="Longest lifetime a share may be given, at creation or renewal.",
    )
    # At least a second: zero would purge a share (and its history) in the
    # instant it ends, before its owner could even see why it ended.
    ended_retention = models.DurationField(
        default=timedelta(days=30),
        validators=[MinValueValidator(timedelta(seconds=1))],
        help_text="How long an ended share (and its history) is kept before the expiry daemon purges it.",
    )
    reminder_lead = models.DurationField(
        default=timedelta(hours=24),
        null=True,
        blank=True,
        validators=[MinValueValidator(timedelta(0))],
        help_text="How long before expiry owners are emailed a reminder; empty or 0 sends none.",
    )

    # Bytes, as the database compares them; the admin form reads "10 GB" too.
    default_quota_bytes = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Storage each user's files may take, unless the user has a quota of their own; empty: unlimited.",
    )

    class Meta:
        verbose_name = "sharing policy"
        verbose_name_plural = "sharing policy"
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="sharing_policy_single_row"),
            models.CheckConstraint(
                condition=Q(default_lifetime__lte=F("max_lifetime")), name="sharing_policy_default_within_max"
            ),
            models.CheckConstraint(
                condition=Q(ended_retention__gte=timedelta(seconds=1)), name="sharing_policy_retention_positive"
            ),
        ]

    def __str__(self) -> str:
        return "Sharing policy"

    def save(self, *args, **kwargs):
        self.pk = self.SINGLETON_ID
        super().save(*args, **kwargs)

    def clean(self):
        if self.default_lifetime and self.max_lifetime and self.default_lifetime > self.max_lifetime:
            raise ValidationError({"default_lifetime": "The default lifetime cannot exceed the maximum lifetime."})

    @classmethod
    def current(cls) -> "SharingPolicy":
        """The policy as it is now: read on every use, never cached, so an
        admin's change applies to the next request in every worker. A plain
        SELECT (sharing/rows.py): the ORM's took ~0.25 ms of each share created."""
        connection = connections[router.db_for_read(cls)]
        row = rows.fetch_one(connection, rows.statement(connection, _policy_sql, cls), [cls.SINGLETON_ID])
        return cls(pk=cls.SINGLETON_ID) if row is None else rows.instance(connection, cls, row)

    def resolve_expires_at(
        self, *, now: datetime, expires_in: int | None = None, expires_at: datetime | None = None
    ) -> datetime:
        """Turn a request's expires_in / expires_at into a deadline.

        Raise ValidationError naming the offending field. Neither given means
        the default lifetime; both given is an error.
        """
        if expires_in is not None and expires_at is not None:
            raise ValidationError({"expires_in": "Give expires_in or expires_at, not both."})
        if expires_in is not None:
            if isinstance(expires_in, bool) or not isinstance(expires_in, int) or expires_in <= 0:
                raise ValidationError({"expires_in": "expires_in must be a positive whole number of seconds."})
            field, lifetime = "expires_in", timedelta(seconds=expires_in)
        elif expires_at is not None:
            if timezone.is_naive(expires_at):
                expires_at = timezone.make_aware(expires_at, UTC)
            if expires_at <= now:
                raise ValidationError({"expires_at": ValidationError("expires_at must be in the future.", code="past")})
            field, lifetime = "expires_at", expires_at - now
        else:
            return now + self.default_lifetime
        if lifetime > self.max_lifetime:
            limit = format_duration(self.max_lifetime)
            message = _("The share would last longer than the maximum lifetime (%(limit)s).") % {"limit": limit}
            raise ValidationError({field: ValidationError(message, code="too_long")})
        return now + lifetime if field == "expires_in" else expires_at


def _policy_sql(connection, model) -> str:
    quote = connection.ops.quote_name
    return (
        f"SELECT {rows.columns(connection, 'p', model)} FROM {quote(model._meta.db_table)} p "
        f"WHERE p.{quote(model._meta.pk.column)} = %s"
    )


DURATION_UNITS = (
    (86400, lambda count: ngettext("%(count)d day", "%(count)d days", count)),
    (3600, lambda count: ngettext("%(count)d hour", "%(count)d hours", count)),
    (60, lambda count: ngettext("%(count)d minute", "%(count)d minutes", count)),
)


def format_duration(value: timedelta) -> str:
    """A whole duration in its largest exact unit, in the active language."""
    seconds = int(value.total_seconds())
    for size, words in DURATION_UNITS:
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return words(count) % {"count": count}
    return ngettext("%(count)d second", "%(count)d seconds", seconds) % {"count": seconds}
