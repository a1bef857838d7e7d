"""Seed a migrated benchmark database (run by database.seed() in a subprocess).

    python -m bench.web.seed --file small=/path/small.bin [--file ...] --list-shares 50 \
        [--zip-file /path/zip-01.bin --zip-file ...]

Creates, directly through the models (no HTTP):
- bench-reader, owner of one file per --file (hard-linked into MEDIA_ROOT,
  or saved into the bucket through the app's storage when STORAGE_URL names one)
  with one share each, the hot links of the download scenarios, a link of
  the first file with a download limit no run reaches, and enough
  more shares for a full page of GET /api/shares/;
- bench-zip, owner of one file per --zip-file (made and hard-linked as
  the --file ones are), all of them in one share without a limit: the zip
  scenario's /s/<token>/all.zip, with no byte budget to run out of (on a
  user of its own, so the reader's page of shares stays as it was);
- bench-writer, owner of one file, whose token creates shares in the
  POST /api/shares/ scenario (on another user, so the list does not grow);
- an API token for each. Prints what the scenarios need as JSON.
"""

import argparse
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import django

HOT_LINK_LIFETIME = timedelta(days=2)  # outlives any run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.web.seed")
    parser.add_argument("--file", action="append", default=[], metavar="KEY=PATH")
    parser.add_argument("--list-shares", type=int, default=50)
    parser.add_argument("--zip-file", action="append", default=[], metavar="PATH")
    args = parser.parse_args(argv)
    django.setup()

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.files import File
    from django.core.files.storage import default_storage
    from django.utils import timezone

    from sharing.models import Share, StoredFile
    from storage.stored import Digests
    from tokens.service import issue

    def put(name: str, source: Path) -> str:
        if settings.STORAGE_URL:
            # A bucket: through the app's own storage, as an upload's bytes end up.
            with open(source, "rb") as f:
                return default_storage.save(name, File(f))
        target = Path(settings.MEDIA_ROOT) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, target)  # the same bytes (and page cache) as the static twin
        return name

    def stored(owner, key: str, source: Path) -> StoredFile:
        name = put(f"files/bench/{owner.username}-{key}", source)
        digests = Digests()
        with open(source, "rb") as f:
            while chunk := f.read(1024 * 1024):
                digests.update(chunk)
        return StoredFile.objects.create(
            owner=owner,
            content=name,
            name=f"{key}.bin",
            size=source.stat().st_size,
            content_type="application/octet-stream",
            sha256=digests.sha256,
            crc32=digests.crc32,
        )

    users = get_user_model().objects
    reader, writer = users.create_user("bench-reader"), users.create_user("bench-writer")
    expires_at = timezone.now() + HOT_LINK_LIFETIME
    links, first = {}, None
    for spec in args.file:
        key, _, path = spec.partition("=")
        stored_file = stored(reader, key, Path(path))
        first = first or stored_file
        links[key] = Share.create_for(file=stored_file, expires_at=expires_at).token
    # A link with a download limit no run reaches: every download is an exact count.
    links["limited"] = Share.create_for(file=first, expires_at=expires_at, max_downloads=1_000_000_000).token
    for _ in range(max(0, args.list_shares - len(links))):
        Share.create_for(file=first, expires_at=expires_at)
    if args.zip_file:
        zip_owner = users.create_user("bench-zip")
        parts = [stored(zip_owner, f"zip-{n:02d}", Path(path)) for n, path in enumerate(args.zip_file, start=1)]
        links["zip"] = Share.create_for(files=parts, expires_at=expires_at).token
    writer_file = stored(writer, "post", Path(args.file[0].partition("=")[2]))
    json.dump(
        {
            "links": links,
            "reader_token": issue(reader, name="bench")[1],
            "writer_token": issue(writer, name="bench")[1],
            "writer_file": writer_file.pk,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
