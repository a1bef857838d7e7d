"""gunicorn settings for microcloud: `gunicorn -c python:microcloud.gunicorn_conf`.

Its logger keeps the secrets of URLs (link tokens, webhook keys) out of the
access and error logs: only their first characters, shortened as in Django's
own logs (microcloud.logfilters).
Everything else is left to the command line (bind, workers, threads,
--preload).

Idle wake-ups. gunicorn's master and each gthread worker wake once a
second with nothing to do (the master to look at its workers' heartbeats,
a worker to touch its heartbeat file and look for lapsed keep-alive
connections): ~0.3 ms of CPU each time on the development VM, most of the
service's idle cost (python -m bench.idle, docs/benchmarks.md, "Idle wake-ups"). Everything
that needs either of them sooner already wakes it: a signal (SIGCHLD,
SIGTERM, SIGHUP...) is queued to the master's wait; a new connection, a
finished request or SIGTERM wakes a worker's poller. What only the clock
brings is the heartbeat, checked against --timeout, and the worker's
keep-alive and pending connections, which keep gunicorn's own 1 s wait
while there are any. So with nothing in hand both wait a quarter of
--timeout (at most IDLE_WAIT_MAX) instead of a second, and a worker learns
of its master's death from the kernel (PR_SET_PDEATHSIG) rather than by
looking every second. These lean on gunicorn's internals (pinned in
requirements.txt); tests/test_idle_gunicorn.py fails if they move.
"""

import contextlib
import ctypes
import gc
import signal
import types

from gunicorn.glogging import Logger
from gunicorn.workers.gthread import ThreadWorker

from microcloud.logfilters import RedactShareTokens

# The longest idle wait of the master and of a worker: a quarter of --timeout
# (120 s in make run) leaves three missed heartbeats before the master would
# call a worker stuck, and a master sees a stuck worker at most this late.
IDLE_WAIT_MAX = 30.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def idle_wait(timeout: float) -> float:
    """How long gunicorn may sleep with nothing in hand, for --timeout `timeout`
    (0: no heartbeat check at all)."""
    return IDLE_WAIT_MAX if not timeout else max(1.0, min(IDLE_WAIT_MAX, timeout / 4))


class RedactingLogger(Logger):
    def setup(self, cfg):
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            log.addFilter(RedactShareTokens())


def quiet_wait(worker, timeout):
    """A gthread worker's wait for events, asleep while it holds no connection."""
    # Kept-alive and pending connections lapse by the clock: gunicorn's own
    # wait (1 s) while there are any. A request in a thread needs no tick:
    # its end is handed to the poller through a pipe.
    if worker.alive and not worker.keepalived_conns and not worker.pending_conns:
        timeout = max(timeout, idle_wait(worker.cfg.timeout))
    ThreadWorker.wait_for_and_dispatch_events(worker, timeout)


logger_class = RedactingLogger


def on_starting(server):
    """The master: wait for signals (each one is queued and wakes it at once)
    up to idle_wait(), not a second."""
    wait_for_signals = server.wait_for_signals
    quiet = idle_wait(server.cfg.timeout)

    def wait_quietly(timeout=1.0):
        return wait_for_signals(timeout=max(timeout, quiet))

    server.wait_for_signals = wait_quietly
    from django.conf import settings

    if settings.configured:  # --preload: import the views now, once for every worker
        from django.urls import get_resolver

        get_resolver().url_patterns  # noqa: B018  (reading it imports every URLconf and view)


def pre_fork(server, worker):
    """The master, before each fork. With --preload it has imported the app:
    no database connection may cross the fork (two processes would talk on
    one socket), and objects frozen out of the collector keep their pages
    shared with the workers instead of being written by a collection."""
    from django.conf import settings

    if settings.configured:  # the app was preloaded
        from django.db import connections

        connections.close_all()
    gc.freeze()


def post_fork(server, worker):
    """The worker: a quiet wait if it is gthread (--threads > 1; sync workers
    are left as they are), and SIGTERM (a graceful stop) when the master dies."""
    if isinstance(worker, ThreadWorker):
        worker.wait_for_and_dispatch_events = types.MethodType(quiet_wait, worker)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
