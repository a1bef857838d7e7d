"""The translation catalogues of every language but English (the msgids'):
every entry translated (none fuzzy), placeholders and markup kept, the
compiled .mo in step with its .po, and no string in the code or templates
missing from a catalogue (the same extraction as `make messages`, run on a
copy of the tree)."""

import gettext
import os
import re
import shutil
import subprocess
import sys

import polib
import pytest
from django.conf import settings

from tests.helpers import REPO_ROOT

TRANSLATED = [code for code, _name in settings.LANGUAGES if code != "en"]
# What makemessages runs: xgettext extracts, msgmerge and msgattrib update the .po.
GETTEXT_TOOLS = ("xgettext", "msgmerge", "msguniq", "msgattrib")
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")
# Not copied for the extraction: not scanned by `make messages` either, or not source at all.
NOT_SOURCE = {".git", ".venv", "var", "media", "docs", "tests", "bench", ".pytest_cache", ".ruff_cache"}


def po_path(language: str, root=REPO_ROOT):
    return root / "locale" / language / "LC_MESSAGES" / "django.po"


def catalogue(language: str) -> polib.POFile:
    return polib.pofile(str(po_path(language)))


def test_french_is_offered_and_has_its_plural_rule():
    assert "fr" in TRANSLATED
    po = catalogue("fr")
    assert po.metadata["Language"] == "fr"
    assert po.metadata["Plural-Forms"].startswith("nplurals=2; plural=(n > 1)")


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_catalogue_is_complete_and_has_nothing_fuzzy(language):
    po = catalogue(language)
    assert len(po) > 150  # the pages, forms and emails are all in it
    assert po.metadata["Language"] == language
    assert not po.metadata_is_fuzzy
    assert [entry.msgid for entry in po.untranslated_entries()] == []
    assert [entry.msgid for entry in po.fuzzy_entries()] == []
    assert [entry.msgid for entry in po.obsolete_entries()] == []


@pytest.mark.parametrize("language", TRANSLATED)
def test_translations_keep_every_placeholder_and_tag(language):
    for entry in catalogue(language):
        wanted = set(PLACEHOLDER.findall(entry.msgid))
        if entry.msgid_plural:
            wanted |= set(PLACEHOLDER.findall(entry.msgid_plural))
            for form, text in entry.msgstr_plural.items():
                # A form for one thing may leave its count out ("un lien"), never add a name.
                assert set(PLACEHOLDER.findall(text)) <= wanted, (entry.msgid, form)
                assert set(PLACEHOLDER.findall(text)) >= wanted - {"count", "counter"}, (entry.msgid, form)
        else:
            assert set(PLACEHOLDER.findall(entry.msgstr)) == wanted, entry.msgid
        # Markup in a message (a <time>, a <code>) is kept as it is.
        for text in [entry.msgstr, *entry.msgstr_plural.values()]:
            assert re.findall(r"<[^>]+>", text) == re.findall(r"<[^>]+>", entry.msgid), entry.msgid


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_compiled_catalogue_is_the_po_file(language):
    """The committed .mo (what Django reads; a clone has no gettext to make
    it) says exactly what the .po says."""
    with po_path(language).with_suffix(".mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)._catalog
    expected = {}
    for entry in catalogue(language).translated_entries():
        key = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid
        if entry.msgid_plural:
            for form, text in entry.msgstr_plural.items():
                expected[(key, form)] = text
        else:
            expected[key] = entry.msgstr
    compiled.pop("", None)  # the header
    assert compiled == expected


def gettext_tools_or_skip() -> None:
    missing = [tool for tool in GETTEXT_TOOLS if shutil.which(tool) is None]
    if not missing:
        return
    problem = f"GNU gettext's {', '.join(missing)} not found (apt-get install gettext)"
    if os.environ.get("CI", "") in {"true", "TRUE", "True", "1", "yes"}:
        pytest.fail(f"{problem}; CI=true requires the extraction test to run.", pytrace=False)
    pytest.skip(f"extraction test skipped: {problem}")


def makemessages_arguments() -> list[str]:
    """MAKEMESSAGES_ARGS from the Makefile, so the test extracts as `make messages` does."""
    text = (REPO_ROOT / "Makefile").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("MAKEMESSAGES_ARGS ="))
    return line.split("=", 1)[1].split()


def test_re_extracting_finds_no_string_missing_from_the_catalogue(tmp_path):
    gettext_tools_or_skip()
    tree = tmp_path / "tree"
    tree.mkdir()
    for item in REPO_ROOT.iterdir():
        if item.name in NOT_SOURCE:
            continue
        if item.is_dir():
            shutil.copytree(item, tree / item.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(item, tree / item.name)
    result = subprocess.run(
        [sys.executable, "manage.py", "makemessages", "--all", *makemessages_arguments()],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr

    def keys(po):
        return {(entry.msgctxt, entry.msgid, entry.msgid_plural) for entry in po if not entry.obsolete}

    for language in TRANSLATED:
        fresh, committed = keys(polib.pofile(str(po_path(language, tree)))), keys(catalogue(language))
        missing = sorted(fresh - committed, key=str)
        stale = sorted(committed - fresh, key=str)
        assert not missing, f"strings not in locale/{language} (`make messages`, then translate them): {missing}"
        assert not stale, f"entries in locale/{language} no longer in the code (run `make messages`): {stale}"
