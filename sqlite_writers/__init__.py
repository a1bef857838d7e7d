"""SQLite writers taking turns: a Django database backend, its two ways in, and batches.

Below every app (sharing, expiry, ratelimit use it; it uses none of them):
- queue.py: the web's writers queue on a flock() beside the database file,
  so they wait in the kernel instead of in SQLite's sleeping busy handler;
- poll.py: the expiry path asks for the write lock every 0.2 ms instead, so
  it goes first soon after the transaction holding the lock commits;
- base.py: Django's SQLite backend with every transaction queued (settings
  use ENGINE "sqlite_writers" when DATABASE_URL names a SQLite file);
- group_commit.py: the writes of threads that arrive together made in one
  transaction, so a crowd of small writers pays for one turn at the lock
  and one commit (the public downloads use it on PostgreSQL too).

All of them decide who waits less, never what is written: BEGIN IMMEDIATE
and the conditional UPDATEs decide that.
"""
