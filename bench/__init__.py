"""Benchmark of share-expiry engines: `python -m bench` (docs/benchmarks.md, "Expiry benchmark").

Three engines run as separate processes against the same freshly built
SQLite database per scenario: our `runexpiry` daemon, the reference
"seed-style loop" (described in docs/expiry.md), and a periodic sweep as
cron jobs do. Every engine stamps `ended_at` when it expires a share, so
lateness is read back from the database, the same way for all three.
"""
