"""Running the service in a container (the Dockerfile at the repository's root).

- entrypoint.py: the image's entrypoint, `python -m deploy.entrypoint ROLE`:
  the secret key made once into the state volume, the migrations (under a
  lock, `manage.py prepare`), then the web server, the expiry daemon or both.
- web_servers.py: the web server's command line (gunicorn, or granian by
  WEB_SERVER), for `make run`, the entrypoint and the benchmarks alike.
- healthcheck.py: the image's HEALTHCHECK (the standard library only).
- backends/: the lock the migrations run under, per database.
- management/commands/prepare.py: migrate under that lock and create the
  first admin user, once however many containers start together.
"""
