"""A backup's manifest.json: what the copied database lists, and what was copied."""

import json
from dataclasses import asdict, dataclass
from pathlib import Path

MANIFEST_FILE = "manifest.json"
FILES_FOLDER = "files"
FORMAT = 1


@dataclass
class Entry:
    name: str  # the stored name (the storage's), as the database has it
    size: int
    sha256: str
    # "copied" (under files/, checked), "not copied" (no --files), or
    # "missing" (deleted between the database's copy and its bytes' turn).
    bytes: str


@dataclass
class Manifest:
    taken_at: str
    database: str  # "db.sqlite3", or "pg_dump" when the dump is kept beside
    entries: list[Entry]

    def write(self, folder: Path) -> None:
        body = {"format": FORMAT, "taken_at": self.taken_at, "database": self.database}
        body["files"] = [asdict(entry) for entry in self.entries]
        (folder / MANIFEST_FILE).write_text(json.dumps(body, indent=1) + "\n")

    @classmethod
    def read(cls, folder: Path) -> "Manifest":
        body = json.loads((folder / MANIFEST_FILE).read_text())
        if body.get("format") != FORMAT:
            raise ValueError(f"{folder / MANIFEST_FILE} is not a backup manifest this version reads")
        entries = [Entry(**entry) for entry in body["files"]]
        return cls(taken_at=body["taken_at"], database=body["database"], entries=entries)


def safe_path(folder: Path, name: str) -> Path:
    """Where the bytes of stored name `name` go under `folder`/files/; a
    name that would leave that folder (a tampered manifest) is refused."""
    root = (folder / FILES_FOLDER).resolve()
    path = (root / name).resolve()
    if root not in path.parents:
        raise ValueError(f"stored name {name!r} leaves the backup's files folder")
    return path
