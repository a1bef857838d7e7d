"""The stored files as storage.moving reads them (`manage.py movefiles`):
their stored names, sizes and checksums, a page at a time in key order."""

from django.db.models import Count, Max, Sum

from sharing.models import StoredFile
from storage.moving import Entry


class StoredFiles:
    def totals(self) -> tuple[int, int, int]:
        # One statement, so the count and the bytes describe the same rows.
        known = StoredFile.objects.aggregate(last=Max("pk"), files=Count("pk"), size=Sum("size"))
        return known["last"] or 0, known["files"], known["size"] or 0

    def page(self, after: int, last: int, limit: int) -> list[Entry]:
        rows = (
            StoredFile.objects.filter(pk__gt=after, pk__lte=last)
            .order_by("pk")
            .only("pk", "name", "content", "size", "sha256")[:limit]
        )
        return [
            Entry(
                key=stored.pk,
                name=stored.content.name,
                size=stored.size,
                sha256=stored.sha256,
                label=f"{stored.content.name} (file {stored.pk}, {stored.name!r})",
            )
            for stored in rows
        ]

    def still_listed(self, entry: Entry) -> bool:
        return StoredFile.objects.filter(pk=entry.key).exists()
