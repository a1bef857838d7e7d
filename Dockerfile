# The microcloud image: one image for the web server, the expiry daemon or
# both (docs/deployment.md, "In a container").
#   podman build --format docker -t microcloud .
#   podman run -p 8000:8000 -v microcloud:/data microcloud            # all, on SQLite
#   podman run ... microcloud serve | expiry | backup /data/backups/x  # one role, or a manage.py command
FROM debian:bookworm-slim

# Debian's Python 3.11 and venv; nothing else (no compiler: every
# requirement has a wheel for it).
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*

# The service's user: the process inside is never root, and what it writes
# into the volume is this user's (uid 10001, group 10001).
RUN groupadd --system --gid 10001 microcloud \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin microcloud

# The requirements first, so a change of the code alone reuses this layer.
# granian too, so WEB_SERVER=granian can choose it (deploy/web_servers.py).
COPY requirements.txt requirements-granian.txt /app/
RUN python3 -m venv /venv \
    && /venv/bin/pip install --no-cache-dir --disable-pip-version-check --quiet \
        -r /app/requirements.txt -r /app/requirements-granian.txt

WORKDIR /app
COPY . /app
# Static files collected at build time (served by WhiteNoise; public, so
# readable by all: the settings give stored files 0600), the code
# compiled, and the state folder made for the volume: the service's alone
# (a new volume, or one mounted on /data/files, starts with this owner).
RUN SECRET_KEY=only-to-collect-static-files STATIC_ROOT=/app/static \
        /venv/bin/python manage.py collectstatic --noinput --verbosity 0 \
    && chmod -R a+rX /app/static \
    && /venv/bin/python -m compileall -q /app \
    && mkdir -m 0700 /data /data/files && chown microcloud:microcloud /data /data/files

ENV PATH=/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    DATA_DIR=/data \
    SQLITE_PATH=/data/db.sqlite3 \
    MEDIA_ROOT=/data/files \
    RATELIMIT_SQLITE_PATH=/data/ratelimit.sqlite3 \
    EMAIL_FILE_PATH=/data/mail \
    STATIC_ROOT=/app/static \
    HOST=0.0.0.0 \
    PORT=8000

VOLUME /data
USER microcloud
EXPOSE 8000
# /healthz for a web role; a daemon container runs exactly as long as its daemon.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["/venv/bin/python", "-m", "deploy.healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/venv/bin/python", "-m", "deploy.entrypoint"]
CMD ["all"]
