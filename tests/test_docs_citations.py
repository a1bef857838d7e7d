"""Citations of the documentation point at sections that exist.

Code and documents cite a section of a document in one form:
`docs/<name>.md, "<Heading>"`, the heading's exact text in double quotes, or
its part before a colon for a heading such as "Upload requests: a fourth
deadline (...)" (in a comment or docstring the quoted heading may wrap onto
the next line). Every such citation in the repository's Python files, the
Makefile, README.md and docs/*.md must name exactly one heading of that
document. A
mention of docs/benchmarks.md in code must name its section: the document
is a reference organised by section, and a bare mention says nothing about
where to look. Markdown links into a document's anchors (`benchmarks.md#hot-link`)
must resolve to one of its headings, as GitHub makes them.

Plain text only (pathlib and re): nothing here needs Django.
"""

import os
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {"node_modules", "var", "media", "staticfiles", "__pycache__"}

CITATION = re.compile(r'docs/([\w.-]+)\.md,\s+"([^"]{1,200})"')
# A line break inside a quoted heading, with a comment's or a wrapped line's
# lead-in on the next line.
WRAP = re.compile(r"\s*\n\s*(?:#+\s*)?")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
LINK_ANCHOR = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")
SECTIONED = ("benchmarks.md",)  # documents that code must cite by section


def source_files() -> list[Path]:
    """Every .py file of the repository (hidden folders and virtualenvs
    left out), the Makefile, README.md and docs/*.md."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        found += [Path(folder) / f for f in sorted(files) if f.endswith(".py")]
    found += [ROOT / "Makefile", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [path for path in found if path.is_file()]


def headings(document: Path) -> list[str]:
    """The headings of a Markdown file, outside fenced code blocks."""
    result, fenced = [], False
    for line in document.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            result.append(match.group(2))
    return result


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: link text kept, lower case,
    punctuation dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    seen: Counter = Counter()
    result = set()
    for heading in headings(document):
        base = slug(heading)
        result.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return result


def where(path: Path, text: str, offset: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"


def citations() -> list[tuple[str, str, str]]:
    """(file:line, document name, heading) of every citation."""
    found = []
    for path in source_files():
        text = path.read_text(encoding="utf-8")
        for match in CITATION.finditer(text):
            heading = WRAP.sub(" ", match.group(2)).strip()
            found.append((where(path, text, match.start()), match.group(1), heading))
    return found


def test_the_citations_are_found():
    """The pattern finds citations at all (a broken pattern would pass every
    other test here)."""
    cited = [c for c in citations() if c[1] == "benchmarks"]
    assert len(cited) >= 20, cited


def test_every_cited_heading_exists_once():
    problems = []
    for place, name, heading in citations():
        document = ROOT / "docs" / f"{name}.md"
        if not document.is_file():
            problems.append(f'{place}: docs/{name}.md, "{heading}": no such document')
            continue
        count = sum(heading in (full, full.split(":")[0]) for full in headings(document))
        if count != 1:
            state = "no such heading" if count == 0 else f"{count} headings of that name"
            problems.append(f'{place}: docs/{name}.md, "{heading}": {state}')
    assert not problems, "\n".join(problems)


def test_code_cites_sectioned_documents_by_section():
    problems = []
    for path in source_files():
        if path.suffix == ".md" or path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        for name in SECTIONED:
            for match in re.finditer(re.escape(f"docs/{name}"), text):
                if not CITATION.match(text, match.start()):
                    place = where(path, text, match.start())
                    problems.append(f'{place}: docs/{name} without its section (docs/{name}, "Heading")')
    assert not problems, "\n".join(problems)


def test_markdown_anchors_resolve():
    problems = []
    for path in source_files():
        if path.suffix != ".md":
            continue
        text = path.read_text(encoding="utf-8")
        for match in LINK_ANCHOR.finditer(text):
            target, anchor = match.groups()
            if target.startswith(("http:", "https:", "mailto:")):
                continue
            document = (path.parent / target).resolve() if target else path
            if document.suffix != ".md" or not document.is_file():
                continue
            if anchor not in anchors(document):
                problems.append(f"{where(path, text, match.start())}: {target or path.name}#{anchor}: no such heading")
    assert not problems, "\n".join(problems)
