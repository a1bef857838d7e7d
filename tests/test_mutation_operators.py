"""The mutation run's operators (mutation.operators, `make mutants`): which
mutants a module gets, and that each changes only the text it names."""

import textwrap
from pathlib import Path

from mutation.config import MODULES
from mutation.operators import mutants_of

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = textwrap.dedent(
    '''
    """A module: the docstring's a < b is text."""
    from dataclasses import dataclass


    @dataclass(frozen=True)
    class Limits:
        class Meta:
            constraints = [Q(files_taken__lte=F("max_files"))]

        def fits(self, used, size, quota):
            """used + size <= quota: the docstring again."""
            return quota is not None and used + size <= quota  # a comment's > too


    def rows(now, length):
        sql = "UPDATE t SET n = n + 1 WHERE left >= %s AND at > %s"
        return Q(expires_at__gt=now, taken__lte=F("max") - length), sql, True, length - 1
    '''
)


def mutations(source: str) -> list[tuple[int, str, str]]:
    return [(m.line, m.original, m.mutated) for m in mutants_of("sample.py", source)]


def test_it_mutates_comparisons_lookups_sql_keywords_and_numbers_in_the_code():
    assert mutations(SAMPLE) == [
        (13, "not ", ""),
        (13, "and", "or"),
        (13, "<=", "<"),
        (17, ">=", ">"),
        (17, ">", ">="),
        (18, "__gt", "__gte"),
        (18, "__lte", "__lt"),
        (18, "True", "False"),
        (18, "-", "+"),
        (18, "1", "2"),
    ]


def test_it_leaves_docstrings_comments_decorators_and_meta_alone():
    lines = {line for line, _, _ in mutations(SAMPLE)}
    assert lines.isdisjoint({2, 6, 9, 12})


def test_each_mutant_changes_only_its_text_and_still_compiles():
    for path in MODULES:
        source = (ROOT / path).read_text()
        for mutant in mutants_of(path, source):
            compile(mutant.source, path, "exec")
            shift = len(mutant.mutated) - len(mutant.original)
            assert len(mutant.source) == len(source) + shift
            changed = [
                n
                for n, (a, b) in enumerate(zip(source.splitlines(), mutant.source.splitlines(), strict=True))
                if a != b
            ]
            assert changed == [mutant.line - 1], mutant.describe()
