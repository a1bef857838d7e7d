"""A real clamd for the tests: Debian's /usr/sbin/clamd with a throw-away
configuration, on a unix socket in a temporary folder, and a signature
database of our own holding only the EICAR test string (an .hdb line: its
MD5, its size and a name), so no signature is downloaded and clamd starts
in about a second."""

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from scanning.clamd import Clamd

CLAMD = "/usr/sbin/clamd"
# The EICAR anti-virus test file: harmless, found by every scanner.
EICAR = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"
SIGNATURE = "Microcloud.Test.EICAR"
# clamd's StreamMaxLength here: the SCAN_MAX_BYTES tests go past it.
STREAM_MAX = "2000M"


def available() -> bool:
    return os.access(CLAMD, os.X_OK)


class ClamdProcess:
    """One clamd started in `folder`: start(), stop(), url."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.socket = folder / "clamd.sock"
        self.url = f"unix://{self.socket}"
        self.process: subprocess.Popen | None = None
        database = folder / "db"
        database.mkdir(exist_ok=True)
        (database / "microcloud.ndb").write_text(f"{SIGNATURE}:0:*:{EICAR.hex()}\n")
        self.config = folder / "clamd.conf"
        self.config.write_text(
            "\n".join(
                [
                    f"LocalSocket {self.socket}",
                    "Foreground yes",
                    f"DatabaseDirectory {database}",
                    f"LogFile {folder / 'clamd.log'}",
                    f"PidFile {folder / 'clamd.pid'}",
                    f"TemporaryDirectory {folder}",
                    f"StreamMaxLength {STREAM_MAX}",
                    "MaxScanSize 4000M",
                    "MaxFileSize 4000M",
                    "MaxThreads 4",
                    "ReadTimeout 120",
                    "CommandReadTimeout 30",
                    "SelfCheck 0",
                    "",
                ]
            )
        )

    def start(self, wait: float = 60.0) -> float:
        """Start clamd and wait until it answers PING; return the seconds it took."""
        started = time.monotonic()
        self.process = subprocess.Popen(
            [CLAMD, "--config-file", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        client = Clamd(self.url, timeout=5)
        while not client.ping():
            if self.process.poll() is not None:
                log = (self.folder / "clamd.log").read_text() if (self.folder / "clamd.log").exists() else ""
                raise RuntimeError(f"clamd exited with {self.process.returncode}: {log[-2000:]}")
            if time.monotonic() - started > wait:
                raise RuntimeError("clamd did not answer PING")
            time.sleep(0.05)
        return time.monotonic() - started

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
