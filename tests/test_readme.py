"""The README's shell walk-throughs name the service's address once (BASE)
and use it everywhere, so a reader running it elsewhere changes one line."""

import re

from tests.helpers import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()
SHELL_BLOCKS = re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def test_the_walk_through_sets_base_once_and_every_command_uses_it():
    assert SHELL_BLOCKS
    commands = "\n".join(SHELL_BLOCKS)
    assert len(re.findall(r"^BASE=", commands, flags=re.M)) == 1
    hard_coded = [line for line in commands.splitlines() if "://" in line and not line.startswith("BASE=")]
    assert hard_coded == []
    assert "$BASE/api/" in commands
