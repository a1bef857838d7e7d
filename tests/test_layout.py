"""The tree as the README and docs/architecture.md describe it: every app
they name exists, and every app of the tree is named in both, in the same
order. Read from the files; nothing is imported."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOT_APPS = {"tests", "bench", "mutation"}


def apps_in_the_tree() -> set[str]:
    return {path.parent.name for path in REPO.glob("*/__init__.py")} - NOT_APPS


def readme_layout() -> list[str]:
    """The top-level folders the README's layout table names, in its order."""
    text = (REPO / "README.md").read_text()
    table = text[text.index("## Layout") :].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)/` \|", table, flags=re.MULTILINE)


def architecture_order() -> list[str]:
    text = (REPO / "docs/architecture.md").read_text()
    block = text[text.index("## The order") :].split("\n## ", 1)[0]
    names = []
    for line in block.splitlines():
        found = re.fullmatch(r"\s+\d+\. (.+)", line)
        if found:
            names += [name.strip() for name in found.group(1).split(",")]
    return names


def architecture_table() -> list[str]:
    text = (REPO / "docs/architecture.md").read_text()
    table = text[text.index("## What each owns") :].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE)


def test_every_folder_the_readme_names_exists():
    assert [name for name in readme_layout() if not (REPO / name).is_dir()] == []


def test_the_readme_names_every_app_in_the_written_order():
    named = [name for name in readme_layout() if name in apps_in_the_tree()]
    assert sorted(named) == sorted(apps_in_the_tree())
    assert named == [name for name in architecture_order() if name in named]


def test_docs_architecture_names_every_app_once_and_nothing_else():
    assert sorted(architecture_order()) == sorted(apps_in_the_tree())
    assert len(set(architecture_order())) == len(architecture_order())
    assert architecture_table() == architecture_order()


def test_every_file_the_architecture_paths_name_exists():
    text = (REPO / "docs/architecture.md").read_text()
    named = set(re.findall(r"`([a-z_]+(?:/[a-z_]+)*\.py)`", text))
    assert named, "the paths name files"
    assert sorted(path for path in named if not (REPO / path).is_file()) == []


def test_the_expiry_package_maps_every_module():
    """expiry/__init__.py lists its modules in a reading order: a new module
    gets its line there."""
    text = (REPO / "expiry/__init__.py").read_text()
    modules = [
        path.relative_to(REPO / "expiry").as_posix()
        for path in (REPO / "expiry").rglob("*.py")
        if path.name != "__init__.py" and "migrations" not in path.parts
    ]
    assert sorted(module for module in modules if module not in text) == []
