"""The `microcloud` command run as a process, and files to give it."""

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers import wait_until
from tokens.service import issue

COMMAND = str(Path(sys.executable).with_name("microcloud"))
SUBCOMMANDS = ("login", "put", "get", "ls", "unshare", "extend")


def environment(home: Path, url: str, user) -> dict:
    """The command's environment: the server at `url`, a new API token of
    `user`'s, and a home folder of its own (its config and state inside)."""
    _, key = issue(user, name="command line")
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "MICROCLOUD_URL": url,
        "MICROCLOUD_TOKEN": key,
    }


def microcloud(env, *args, cwd=None, check=True):
    done = subprocess.run([COMMAND, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def start_microcloud(env, *args, cwd=None):
    return subprocess.Popen([COMMAND, *args], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def pause(process: subprocess.Popen) -> None:
    """SIGSTOP `process` and return once it has stopped: the signal arrives
    on its own time, and until then the files it writes may still grow."""
    process.send_signal(signal.SIGSTOP)
    stopped = wait_until(lambda: Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T", 10)
    assert stopped, "the command did not stop"


def random_file(path: Path, size: int) -> Path:
    with path.open("wb") as out:
        left = size
        while left:
            piece = os.urandom(min(left, 1 << 20))
            out.write(piece)
            left -= len(piece)
    return path


def sha256(path: Path) -> str:
    # Read in pieces: the round trip of a gigabyte must not hold it in memory.
    with path.open("rb") as source:
        return hashlib.file_digest(source, "sha256").hexdigest()
