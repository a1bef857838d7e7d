"""Which of the owner's links the dashboard lists: a view (Active, the
default; Ended; All) and a search by file name or link token, read from the
query string so that every choice is a plain link or a GET form."""

from datetime import datetime

from django import forms
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from sharing.models import Share

ACTIVE, ENDED, ALL = "active", "ended", "all"
# The dashboard's tabs: (query value, label), the default first.
VIEWS = [
    (ACTIVE, pgettext_lazy("links view", "Active")),
    (ENDED, pgettext_lazy("links view", "Ended")),
    (ALL, pgettext_lazy("links view", "All")),
]
# Addresses bookmarked before there was an Ended view still answer: one way
# of ending each, as the API's ?status= names them.
NARROWER = [Share.Status.EXPIRED, Share.Status.UNSHARED]
QUERY_MAX = 200  # longer than any file name (255 is the column; people type less)


class LinkSearch(forms.Form):
    status = forms.ChoiceField(choices=VIEWS + [(value, value) for value in NARROWER], required=False)
    q = forms.CharField(
        label=_("Search links"),
        max_length=QUERY_MAX,
        required=False,
        strip=True,
        help_text=_("A file name or a link, or part of one."),
    )

    def __init__(self, data, **kwargs):
        super().__init__(data, **kwargs)
        self.fields["status"].error_messages["invalid_choice"] = _(
            "“%(value)s” is not a view of links: choose Active, Ended or All."
        )

    @property
    def view(self) -> str:
        """The view to list: the one asked for if valid, else Active."""
        if self.is_valid():
            return self.cleaned_data["status"] or ACTIVE
        return ACTIVE

    @property
    def query(self) -> str:
        return self.cleaned_data["q"] if self.is_valid() else ""

    def shares(self, shares, now: datetime):
        """`shares` narrowed to the view and the search."""
        view = self.view
        if view == ACTIVE:
            shares = shares.with_effective_status(Share.Status.ACTIVE, now)
        elif view == ENDED:
            # Ended is every way of not being active, each spelled once in with_effective_status.
            shares = shares.with_effective_status(Share.Status.EXPIRED, now) | shares.with_effective_status(
                Share.Status.UNSHARED, now
            )
        elif view in NARROWER:
            shares = shares.with_effective_status(view, now)
        if self.query:
            shares = shares.filter(pk__in=matching(self.query))
        return shares


def matching(query: str):
    """The ids of shares whose token or one of whose files' names holds `query`.

    A whole link pasted in (https://host/s/<token>) is searched by its token.
    """
    token = query.rstrip("/").rsplit("/", 1)[-1]
    return Share.objects.filter(Q(items__file__name__icontains=query) | Q(token__icontains=token)).values("pk")
