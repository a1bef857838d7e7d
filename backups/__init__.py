"""Backups: `manage.py backup DEST` and `manage.py restore SRC`.

A backup is a folder: the database as of one instant (SQLite's online
backup API; a PostgreSQL database is dumped with pg_dump beside it,
docs/deployment.md), `manifest.json` listing every stored file of that copy
(name, size, sha256, as the database has them) and, with `--files`, the
files' bytes under `files/`, each checked against its sha256 as it is copied.

Modules: backends/ (the database copied and restored, per database),
manifest.py (the manifest), taking.py (a backup), restoring.py (into an
empty state only), management/commands/ (the thin commands).
"""
