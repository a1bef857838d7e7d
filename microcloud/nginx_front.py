"""Debian's nginx in front of gunicorn, as docs/deployment.md configures it
for DOWNLOAD_OFFLOAD=x-accel-redirect.

The service never imports this: it is the deployment's nginx configuration
as text, and a way to run it locally. The locations below are the text the
docs show (tests/test_download_offload.py checks that they agree, and runs
them in front of gunicorn); the web benchmark runs them too, with a location
of its own added.
"""

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

DEPLOYMENT_LOCATIONS = """
        # Only reachable through X-Accel-Redirect from the app, never by URL.
        location /_protected/ {{
            internal;
            alias {media_root}/;
            # The app's answer decided these; nginx would drop or replace them.
            etag off;
            if_modified_since off;
            add_header ETag $upstream_http_etag always;
            add_header Content-Security-Policy $upstream_http_content_security_policy always;
            add_header X-Content-Type-Options $upstream_http_x_content_type_options always;
        }}
        location / {{
            proxy_pass http://{upstream};
            # $http_host keeps the port: links and upload URLs the app writes must reach it.
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            # With TLS here: BEHIND_TLS_PROXY=true makes the app trust this one.
            proxy_set_header X-Forwarded-Proto $scheme;
            # Pass streamed bytes on as the client takes them: a limited link's budget
            # counts what left the app, and a buffering proxy reads far ahead of a client.
            proxy_buffering off;
        }}
"""

CONF = """
{user}
daemon off;
worker_processes {workers};
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{}}
http {{
    access_log off;
    sendfile on;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    upstream app {{
        server {upstream};
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
{locations}{extra}
    }}
}}
"""


def find_nginx() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def locations(media_root: Path, upstream: str) -> str:
    """The deployment's two locations, as docs/deployment.md shows them."""
    return DEPLOYMENT_LOCATIONS.format(media_root=media_root, upstream=upstream)


def config(work: Path, port: int, media_root: Path, upstream: str, *, extra_locations: str = "") -> str:
    """A whole nginx.conf: the deployment's locations, plus `extra_locations`
    (nginx text, inside the same server block) if given."""
    # Started as root, nginx's workers would run as nobody, who may not read
    # the stored files (0600): they run as the service's user, as the docs say.
    user = f"user {pwd.getpwuid(os.getuid()).pw_name};" if os.getuid() == 0 else ""
    # proxy_pass to the upstream block keeps connections to gunicorn open.
    return CONF.format(
        user=user,
        workers=os.cpu_count() or 1,
        work=work,
        port=port,
        upstream=upstream,
        locations=locations(media_root, "app"),
        extra=extra_locations,
    )


@contextlib.contextmanager
def nginx(
    nginx_path: str, work: Path, port: int, media_root: Path, upstream: str, *, extra_locations: str = ""
) -> Iterator[subprocess.Popen]:
    """Run nginx in the foreground until the block ends (SIGQUIT: graceful)."""
    work.mkdir(parents=True, exist_ok=True)
    conf = work / "nginx.conf"
    conf.write_text(config(work, port, media_root, upstream, extra_locations=extra_locations))
    with open(work / "nginx.out", "wb") as out:
        process = subprocess.Popen([nginx_path, "-c", str(conf)], stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for_port(port, 10, process)
        yield process
    finally:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _wait_for_port(port: int, timeout: float, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited ({process.returncode}) before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nginx not listening on {port} after {timeout} s")
