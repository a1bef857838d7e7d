"""Which files a share holds: one row per file, in the order the owner gave.

A share holds one file or several behind one link, one deadline, one limit
and one password. Deleting a file takes it out of every share that holds it
(the row cascades); a share whose last file goes ends (sharing.models.removal).
"""

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, ngettext

from sharing.models.files import StoredFile
from sharing.models.scans import ScanState

# Enough for a folder of photos; every file is a row and a line on the link's page.
MAX_FILES_PER_SHARE = 500


class ShareItem(models.Model):
    share = models.ForeignKey("sharing.Share", on_delete=models.CASCADE, related_name="items")
    file = models.ForeignKey(StoredFile, on_delete=models.CASCADE, related_name="share_items")
    # 1-based and kept when another file leaves: a file's address on the link
    # (/s/<token>/files/<position>) never comes to name another file.
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["share", "position"]
        constraints = [
            models.UniqueConstraint(fields=["share", "position"], name="share_item_position_unique"),
            models.UniqueConstraint(fields=["share", "file"], name="share_item_file_unique"),
            models.CheckConstraint(condition=models.Q(position__gte=1), name="share_item_position_positive"),
        ]

    def __str__(self) -> str:
        return f"file {self.position} of share {self.share_id}"


class ShareFiles:
    """The files one share holds, in order, each with its position_in_share,
    read at most once (Share.files, file_ids, file, file_at and title ask
    this, and a share drops it when it is read again from the database).

    `items` is the share's items manager and `saved` whether the share has a
    row; `prefetched`: a list of shares read its items already
    (prefetch_related("items__file"), share_by_token), so they cost no query."""

    def __init__(self, items, *, saved: bool, prefetched: bool):
        self.items = items
        self.saved = saved
        self.prefetched = prefetched
        self.held: list[StoredFile] | None = None  # read once, or given by attach()

    def all(self) -> list[StoredFile]:
        """The files, in order (empty when all were deleted)."""
        if self.held is None:
            items = self.items.all()
            if not self.prefetched:
                items = items.select_related("file")
            self.held = [_placed(item) for item in items] if self.saved else []
        return self.held

    def at(self, position: int) -> StoredFile | None:
        """The file at `position` in the share (its address on the link), or None."""
        return next((stored for stored in self.all() if stored.position_in_share == position), None)

    def ids(self) -> list[int]:
        """The ids of the files, in order: from prefetched items (a list of
        shares, prefetch_related("items")) without reading the files."""
        if self.held is None and self.prefetched:
            return [item.file_id for item in self.items.all()]
        return [stored.pk for stored in self.all()]

    def attach(self, files: list[StoredFile]) -> None:
        """Hold `files` (already placed) without reading them."""
        self.held = list(files)

    def first(self) -> StoredFile | None:
        """The first file (None when none is left): a share of one file, the
        common case, is about this one."""
        files = self.all()
        return files[0] if files else None

    def title(self) -> str:
        """How pages and mails name the share: its file's name, "name and N
        more", or "a deleted file"."""
        files = self.all()
        if not files:
            return gettext("a deleted file")
        if len(files) == 1:
            return files[0].name
        return ngettext("%(name)s and %(count)d more file", "%(name)s and %(count)d more files", len(files) - 1) % {
            "name": files[0].name,
            "count": len(files) - 1,
        }


def _placed(item: ShareItem) -> StoredFile:
    item.file.position_in_share = item.position
    return item.file


def holding(file_id) -> models.QuerySet:
    """The ids of the shares that hold file `file_id` (an id or an
    expression such as OuterRef), for Share.objects.filter(pk__in=...):
    a subquery, so locking those shares never locks their item rows."""
    return ShareItem.objects.filter(file_id=file_id).values("share_id")


def file_ids_of(share_id: int, using: str = "default") -> list[int]:
    """The ids of the files share `share_id` holds, in order."""
    return list(ShareItem.objects.using(using).filter(share_id=share_id).values_list("file_id", flat=True))


def check_files(files) -> list[StoredFile]:
    """The files a new share may hold, as a list; ValidationError names what is wrong."""
    files = list(files)
    if not files:
        raise ValidationError({"files": gettext("A share needs at least one file.")})
    if len(files) > MAX_FILES_PER_SHARE:
        raise ValidationError({"files": gettext("A share holds at most %(max)d files.") % {"max": MAX_FILES_PER_SHARE}})
    if len({stored.pk for stored in files}) != len(files):
        raise ValidationError({"files": gettext("A file is listed twice.")})
    if len({stored.owner_id for stored in files}) != 1:
        raise ValidationError({"files": gettext("All files of a share must belong to one owner.")})
    infected = [stored.name for stored in files if stored.scan_state == ScanState.INFECTED]
    if infected:
        raise ValidationError(
            {"files": gettext("%(name)s was found infected by malware: it cannot be shared.") % {"name": infected[0]}}
        )
    return files
