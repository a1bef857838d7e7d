"""The expiry daemon (`manage.py runexpiry`): it ends shares at their deadline.

Where is a share ended, by whom, with which side effects? Not here: every
end by time goes through sharing/models/expiring.py (expire_shares,
expire_overdue), the rule "due" and the end states are in
sharing/models/state.py, and docs/lifecycle.md tells every way a share ends,
who ends it and what follows. This package only decides *when* to call that
path, and does it on time.

The modules, roughly from the command down:

- management/commands/runexpiry.py: parse the options, build the service, run it.
- service.py: build_service() assembles the daemon; ExpiryService starts, stops and closes it.
- daemon.py: the thread: wait until the next deadline, run steps, survive failures.
- lease_lock.py: one daemon at a time on SQLite, through a lock on a file beside the database.
- lease.py: the same through a renewed row (models.Lease), for daemons on several machines.
- scheduler.py: the windowed heap of deadlines: refresh, pick-up, catch-up, batches.
- coalescing.py: how long a due share may wait for its neighbours, so both go in one statement.
- window.py: a refresh's window: how far it reaches, read a page per step so due shares never wait for it all.
- bursts.py: how due shares become stamped statements, and SQLite bursts.
- store.py: the daemon's only door to the database (reads, and calls of the expiry path).
- watchers.py: how the daemon learns of shares written by other processes.
- wal_watch.py: SQLite: wake the daemon's safety look when the database is written (inotify).
- notify.py: the other side: announce new and renewed deadlines after commit.
- deadlines.py: a heap of keys by the time each falls due, for the deadlines other than the shares'.
- reminders.py: the second deadline per share, its reminder, claimed and mailed.
- rows.py: deadlines of rows the database decides on, kept like the reminders.
- uploads.py: resumable uploads' deadlines; due ones removed through uploads.models.remove_if_due.
- requests.py: upload requests' deadlines; due ones ended through collect.ending.end_if_due.
- housekeeping.py: ephemeral files, folded download counts, retention purge, removed uploads' partial bytes.
- checkpoint.py: SQLite WAL checkpoints off the daemon's thread.
- idlog.py: the --log-expired-ids audit file.
- models.py: the Lease row.
- apps.py: connects the notify receiver.
"""
