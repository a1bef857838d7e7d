"""Append the ids each committed expiry batch changed to a file.

For audits, the fault tests and the benchmark: one line per share,
"<id> <ended_at> <logged_at>" (epoch seconds), written after the commit from
the shares_expired signal; logged_at - ended_at bounds how much earlier than
its commit a share's ended_at was stamped. Each batch is one write()
to a file opened O_APPEND, so lines from several daemons never interleave and
a SIGKILL loses at most the batch committed in the instant before it.
"""

import os
import time

from sharing.signals import shares_expired


class ExpiredIdLog:
    def __init__(self, path: str):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def connect(self) -> "ExpiredIdLog":
        shares_expired.connect(self.record, dispatch_uid=f"expiry.idlog.{id(self)}")
        return self

    def close(self) -> None:
        shares_expired.disconnect(dispatch_uid=f"expiry.idlog.{id(self)}")
        os.close(self.fd)

    def record(self, sender, share_ids, ended_at, **kwargs) -> None:
        stamp, logged = repr(ended_at.timestamp()), repr(time.time())
        os.write(self.fd, "".join(f"{share_id} {stamp} {logged}\n" for share_id in share_ids).encode())
