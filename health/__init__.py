"""Health endpoints for supervisors and load balancers (JSON, no secrets).

- `/healthz`: this process answers (nothing else is asked).
- `/readyz`: the service can do its work: the database answers, every
  migration is applied, the file store is reachable, and an expiry daemon
  holds its lease (checks.py, daemon.py); 503 while any of them is not so.

Modules: checks.py (database, migrations, storage), daemon.py (the expiry
daemon, seen from a web node through its lease), views.py, urls.py.
"""
