"""The README's shell walk-through runs as written, in order, against a
fresh `make run` (its own var/, database, media and admin user), and prints
what its comments say it prints.

Every ```sh block of README.md is run, in the README's order, by one bash
(the variables of one block are the next one's, as in a reader's
terminal), with `set -euo pipefail`: a command that fails stops the run.
A command whose comment starts with HTTP statuses (`# 204`, `# 403: needs
the password`, `# 200 200 410`) must print exactly those; one whose comment
names a header (`# Content-Disposition: ...`) must print it. The run is
cut into those steps by markers the test adds after each such line.
"""

import os
import re
import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, free_port, wait_until
from tests.test_hardening_make import NEEDS_MAKE, make_run_env

pytestmark = [NEEDS_MAKE, pytest.mark.timeout(600)]

README = (REPO_ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
BASE_LINE = "BASE=http://127.0.0.1:8000"
ADMIN = {"DJANGO_SUPERUSER_USERNAME": "admin", "DJANGO_SUPERUSER_PASSWORD": "change-me-now"}
TOOLS = ("bash", "curl", "wget", "aria2c", "unzip", "python3", "cmp", "paste")
# `... # 200 200 410` or `... # 403: needs the password`: the statuses printed.
STATUSES = re.compile(r"#\s+((?:[1-5]\d\d\b\s*)+)(?::.*)?$")
# `... # Content-Disposition: attachment; filename="report.txt"`: a header printed.
HEADER = re.compile(r"#\s+([A-Z][A-Za-z-]+: .+)$")
MARK = "@@step {}@@"


def expectation(line: str) -> tuple[str, str] | None:
    """What a line's trailing comment says it prints, if it says."""
    if "#" not in line or line.lstrip().startswith("#"):
        return None
    if found := STATUSES.search(line):
        return "statuses", " ".join(found.group(1).split())
    if found := HEADER.search(line):
        return "header", found.group(1).strip()
    return None


def instrumented(blocks: list[str], base: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The script to run (BASE pointed at the server, a marker after each
    line that says what it prints) and, per marker, (line, kind, expected)."""
    lines, expected = ["set -euo pipefail"], []
    for block in blocks:
        for line in block.splitlines():
            lines.append(line.replace(BASE_LINE, f"BASE={base}"))
            said = expectation(line)
            if said is not None:
                lines.append(f"echo '{MARK.format(len(expected))}'")
                expected.append((line.strip(), *said))
    return "\n".join(lines) + "\n", expected


def test_the_comments_this_test_reads_are_in_the_readme():
    _, expected = instrumented(BLOCKS, "http://example")
    kinds = [kind for _, kind, _ in expected]
    assert kinds.count("statuses") >= 6  # delete 204, gone 410, password 403, limit 200 200 410, expiry x2
    assert ("header" in kinds) is True
    assert BASE_LINE in README


@pytest.fixture
def served(tmp_path):
    """A fresh `make run` with the README's admin user: its base URL."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CI") in {"true", "1", "yes"}:
            pytest.fail(f"the walk-through needs {', '.join(missing)}", pytrace=False)
        pytest.skip(f"the walk-through needs {', '.join(missing)}")
    port = free_port()
    command, env = make_run_env(tmp_path, port)
    env.update(ADMIN, MEDIA_ROOT=str(tmp_path / "media"), RATELIMIT_SQLITE_PATH=str(tmp_path / "ratelimit.sqlite3"))
    log = tmp_path / "run.txt"
    with log.open("w") as out:
        run = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        # Ready when /readyz says so: database migrated, file store, and the expiry daemon's lease.
        assert wait_until(lambda: run.poll() is None and ready(base), 180, interval=0.1), log.read_text()[-3000:]
        yield base
    finally:
        os.killpg(run.pid, signal.SIGINT)
        run.wait(60)


def ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_every_block_runs_in_order_and_prints_what_it_says(served, tmp_path):
    script, expected = instrumented(BLOCKS, served)
    work = tmp_path / "walk"
    work.mkdir()
    (work / "walkthrough.sh").write_text(script)
    done = subprocess.run(
        ["bash", "walkthrough.sh"], cwd=work, capture_output=True, text=True, timeout=480, check=False
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    output = done.stdout
    steps = re.split(r"@@step \d+@@\n", output)
    assert len(steps) == len(expected) + 1, output[-3000:]
    for (line, kind, said), printed in zip(expected, steps, strict=False):
        if kind == "statuses":
            # Exactly those codes, last (after a body the same command may print), nothing after.
            codes = r"\s+".join(said.split())
            assert re.search(rf"(?<!\d){codes}\s*$", printed), f"{line!r} printed {printed[-500:]!r}"
        else:
            assert said.lower() in printed.lower(), f"{line!r} printed {printed[-500:]!r}"
    # What the blocks print without a comment of that form.
    assert "quarterly numbers" in output  # the download, cat
    assert "intact" in output  # the resumed and parallel downloads are the file
    assert "resumed" in output  # the zip resumed from 100 bytes
    for name in ("report.txt", "slides.txt", "minutes.txt"):
        assert name in output  # unzip -l
    assert re.search(r'"state":\s*"open"', output)  # the upload request
    late = re.findall(r"^\d+ expired expired [\d.]+ ms late$", output, flags=re.M)
    assert len(late) == 3, output[-2000:]
    assert Path(work / "big.img").read_bytes() == Path(work / "disk.img").read_bytes()
