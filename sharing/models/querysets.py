"""Queries over shares: the ones that hold a file, may be served, or have
the status a client sees (the rules themselves are sharing.models.state's
and sharing.models.budget's)."""

from datetime import datetime

from django.db import models
from django.db.models import Q

from sharing.models import budget
from sharing.models.downloads import pending_downloads
from sharing.models.items import holding
from sharing.models.state import Status, due_q, servable_q


class ShareQuerySet(models.QuerySet):
    def holding(self, file_id):
        """The shares that hold file `file_id` (among others or alone)."""
        return self.filter(pk__in=holding(file_id))

    def servable(self, now: datetime):
        """The shares that may be served at `now` (sharing.models.state's rule)."""
        return self.filter(servable_q(now))

    def with_effective_status(self, status: str, now: datetime):
        """Filter by the status a client sees (Share.fate): an active share
        past its expiry is already expired, whether or not the daemon has got
        to it, and so is one whose byte budget is used up before its last
        response has settled and recorded the end."""
        used_up = budget.used_up_q()
        if status == Status.ACTIVE:
            return self.servable(now).exclude(used_up)
        if status == Status.EXPIRED:
            return self.filter(Q(status=status) | due_q(now) | (servable_q(now) & used_up))
        if status == Status.UNSHARED:
            return self.filter(status=status)
        return self.none()

    def with_pending_downloads(self):
        """Annotate each share's downloads not yet folded into download_count
        (read by Share.total_downloads without a query per share)."""
        return self.annotate(pending_downloads=pending_downloads())
