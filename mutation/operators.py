"""The mutants of one module's source, made from its tokens.

Working on tokens (not on a re-printed AST) keeps every other character of
the file as it was, so a mutant differs from the original in exactly the
text it names, and the line it reports is the line in the file.

Which mutations, and why these: the rules are comparisons at a boundary
(a quota filled exactly, a deadline to the microsecond, the last byte of a
budget), so the operators move boundaries and flip conditions:
- Python comparisons `<`/`<=`, `>`/`>=`, `==`/`!=`;
- Django lookups `__lt`/`__lte`, `__gt`/`__gte`, in keyword names and in
  strings (f"{prefix}expires_at__gt");
- SQL comparisons inside string literals (` < ` / ` <= `, ` > ` / ` >= `);
- `and`/`or`, `True`/`False`, a `not` removed;
- `+ n`/`- n`, and an integer literal inside a function made one larger.
`True`/`False` and integers are mutated in function bodies only: in a
model's field declarations (null=True, editable=False, max_length=255) they
reach the database through the migrations, or only the admin's forms.
Left alone: docstrings and comments (text, not behaviour), decorators
(`@dataclass(frozen=True)` declares, the code below it decides), and the
bodies of `class Meta:` (indexes and constraints reach the database through the
migrations, which a mutated model does not change).
"""

import ast
import io
import re
import tokenize
from dataclasses import dataclass

COMPARISONS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
LOOKUPS = {"__lt": "__lte", "__lte": "__lt", "__gt": "__gte", "__gte": "__gt"}
KEYWORDS = {"and": "or", "or": "and", "True": "False", "False": "True"}
LOOKUP_RE = re.compile(r"__(?:lt|lte|gt|gte)\b")
# An SQL comparison in a statement's text: spaced, as every statement here is written.
SQL_RE = re.compile(r"(?<= )(?:<=|>=|<|>)(?= )")
SQL_SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


@dataclass(frozen=True)
class Mutant:
    path: str
    line: int
    original: str
    mutated: str
    source: str  # the whole mutated module
    line_text: str  # the original line, stripped

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.original!r} -> {self.mutated!r}    {self.line_text}"


def _line_starts(source: str) -> list[int]:
    starts, total = [0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _skipped_lines(tree: ast.AST) -> set[int]:
    """Lines of docstrings, decorators and `class Meta:` bodies."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Meta":
            skipped.update(range(node.lineno, node.end_lineno + 1))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                skipped.update(range(first.lineno, first.end_lineno + 1))
        for decorator in getattr(node, "decorator_list", []):
            skipped.update(range(decorator.lineno, decorator.end_lineno + 1))
    return skipped


def _body_lines(tree: ast.AST) -> set[int]:
    """Lines of function bodies (not their signatures: a default argument
    the callers always pass decides nothing)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(range(node.body[0].lineno, node.end_lineno + 1))
        elif isinstance(node, ast.Lambda):
            inside.update(range(node.lineno, node.end_lineno + 1))
    return inside


def _is_operand_end(token: tokenize.TokenInfo | None) -> bool:
    """Whether `token` ends an operand, so a `+`/`-` after it is binary."""
    if token is None:
        return False
    if token.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING):
        return token.string not in ("and", "or", "not", "in", "is", "return", "if", "else", "lambda")
    return token.type == tokenize.OP and token.string in (")", "]", "}")


def mutants_of(path: str, source: str) -> list[Mutant]:
    tree = ast.parse(source)
    skipped, in_body = _skipped_lines(tree), _body_lines(tree)
    starts = _line_starts(source)
    lines = source.splitlines()
    tokens = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    ]
    found: list[Mutant] = []

    def add(row: int, begin: int, end: int, replacement: str) -> None:
        original = source[begin:end]
        mutated = source[:begin] + replacement + source[end:]
        found.append(Mutant(path, row, original, replacement, mutated, lines[row - 1].strip()))

    for index, token in enumerate(tokens):
        row, col = token.start
        if row in skipped:
            continue
        begin = starts[row - 1] + col
        end = starts[token.end[0] - 1] + token.end[1]
        text = token.string
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        before = tokens[index - 1] if index else None
        if token.type == tokenize.OP and text in COMPARISONS:
            add(row, begin, end, COMPARISONS[text])
        elif token.type == tokenize.OP and text in ("+", "-") and following and following.type == tokenize.NUMBER:
            if _is_operand_end(before):
                add(row, begin, end, "-" if text == "+" else "+")
        elif token.type == tokenize.NAME and text in ("True", "False") and row not in in_body:
            continue
        elif token.type == tokenize.NAME and text in KEYWORDS:
            add(row, begin, end, KEYWORDS[text])
        elif token.type == tokenize.NAME and text == "not" and following is not None:
            # Removing `not` (and the space after it): `not x` -> `x`, `is not` -> `is`.
            add(row, begin, starts[following.start[0] - 1] + following.start[1], "")
        elif token.type == tokenize.NAME and LOOKUP_RE.search(text):
            for match in LOOKUP_RE.finditer(text):
                add(row, begin + match.start(), begin + match.end(), LOOKUPS[match.group()])
        elif token.type == tokenize.NUMBER and row in in_body and re.fullmatch(r"\d+", text):
            add(row, begin, end, str(int(text) + 1))
        elif token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            for match in LOOKUP_RE.finditer(text):
                add(
                    _row_at(starts, begin + match.start()),
                    begin + match.start(),
                    begin + match.end(),
                    LOOKUPS[match.group()],
                )
            for match in SQL_RE.finditer(text):
                add(
                    _row_at(starts, begin + match.start()),
                    begin + match.start(),
                    begin + match.end(),
                    SQL_SWAPS[match.group()],
                )
    return found


def _row_at(starts: list[int], offset: int) -> int:
    """The 1-based line holding character `offset` of the source."""
    low, high = 0, len(starts) - 1
    while low < high - 1:
        middle = (low + high) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle
    return low + 1
