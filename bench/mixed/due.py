"""Seed the shares that fall due during a mixed run (run in a subprocess by
__main__, on a database bench.web.seed has filled).

    python -m bench.mixed.due --owner bench-writer --count 10000 --first EPOCH --span 10

Bulk-inserted through the models (bulk_create: no per-share event or
notice), so they must exist before the daemon starts, whose first window
load then holds them all, as it would hold shares created days ago. Their
deadlines are evenly spaced over [first, first + span). Last comes a canary,
a share already due: the daemon expires it as it starts, and its id in the
daemon's id log tells the benchmark the daemon is up (its window loaded).
Prints the ids as JSON.
"""

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta

import django

BATCH = 2000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mixed.due")
    parser.add_argument("--owner", required=True, help="username owning the shares (and the file they share)")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--first", type=float, default=0.0, help="the first deadline, seconds since the epoch")
    parser.add_argument("--span", type=float, default=1.0, help="seconds the deadlines are spread over")
    args = parser.parse_args(argv)
    django.setup()

    from django.contrib.auth import get_user_model

    from sharing.models import Share, ShareItem, StoredFile

    owner = get_user_model().objects.get(username=args.owner)
    stored = StoredFile.objects.filter(owner=owner).order_by("pk").first()
    created = datetime.now(UTC)
    first = datetime.fromtimestamp(args.first, UTC)
    step = timedelta(seconds=args.span / args.count) if args.count else timedelta(0)
    ids: list[int] = []
    one_copy = {"size": stored.size, "least": stored.size}  # each share holds the one file
    for start in range(0, args.count, BATCH):
        shares = [
            Share(owner=owner, created_at=created, updated_at=created, expires_at=first + i * step, **one_copy)
            for i in range(start, min(start + BATCH, args.count))
        ]
        made = Share.objects.bulk_create(shares)
        ShareItem.objects.bulk_create(ShareItem(share_id=share.pk, file_id=stored.pk, position=1) for share in made)
        ids += [share.pk for share in made]
    now = datetime.now(UTC)
    canary = Share.objects.create(
        owner=owner, created_at=now - timedelta(seconds=1), updated_at=now, expires_at=now, **one_copy
    )
    ShareItem.objects.create(share=canary, file=stored, position=1)
    json.dump({"ids": [min(ids), max(ids)] if ids else None, "canary": canary.pk}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
