"""Append the ids each committed expiry batch changed to a file.

For audits and the fault tests, which count expiries across processes and
crashes: one line per share, "<id> <ended_at as epoch seconds>", written
after the commit from the shares_expired signal. Each batch is one write()
to a file opened O_APPEND, so lines from several daemons never interleave and
a SIGKILL loses at most the batch committed in the instant before it.
"""

import os

from expiry.signals import shares_expired


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
        stamp = repr(ended_at.timestamp())
        os.write(self.fd, "".join(f"{share_id} {stamp}\n" for share_id in share_ids).encode())
