"""Django's PostgreSQL backend, whose per-request health check asks the socket
before it asks the server (base.py; settings use ENGINE "postgres_backend"
when DATABASE_URL names a PostgreSQL server).

Below every app, beside sqlite_writers: it uses none of the project's packages.
"""
