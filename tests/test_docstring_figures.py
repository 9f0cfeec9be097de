"""Docstrings, strings, comments and doc pages quote no hand-typed measured figure.

Measured figures live in the reports the studies generate (`reports/`), where they come from a
run; a figure typed into a docstring or a comment goes stale silently. A claim states the
mechanism or a derived bound, and points at the test that asserts it.

The rule, on every ``.py`` file of impactbench/, methods/, problems/ and studies/: in the text of
every string (docstrings, and report texts such as a study's notes) and of every block of
consecutive ``#`` comments, split into sentences (at '.', ';', '?' or '!' before a space, at a
blank line and at a reST section underline), a sentence fails when it contains a number (a digit
not inside a name such as ``DOP853`` or ``t0``) and the word "measured" as an aside attributing a
figure: inside parentheses, beside a ':' or ',', or followed by the number itself (at most
three words and a ':' between them), as in
"(measured: 0.12 in q)", "depth 0.31 (measured)", "at 0.9 h_e / c, measured", "measured flat
at 0.1" (in a parenthesis) or "# measured 0.118". The word after a determiner or an auxiliary is
methodology, not a figure, and passes: "its measured value", "errors are measured against the
reference at rtol 1e-12"; so does a participle outside any aside ("a rate measured on one
trajectory"). No compilation: the files are parsed, not imported.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("impactbench", "methods", "problems", "studies")

WORD = re.compile(r"\bmeasured\b", re.IGNORECASE)
NUMBER = re.compile(r"(?<![A-Za-z_\d])\d")
SENTENCE_END = re.compile(r"[.;?!](?=\s)|\n[ \t]*\n|\n[ \t]*([-=~^])\1{2,}[ \t]*(?=\n|$)")
#: A "measured" right after one of these is an adjective or a passive verb: methodology.
NOT_AN_ASIDE = {"the", "its", "a", "an", "their", "not", "is", "are", "was", "were", "be", "been"}


def _inside_parentheses(text: str, position: int) -> bool:
    depth = 0
    for char in text[:position]:
        if char == "(":
            depth += 1
        elif char == ")" and depth > 0:
            depth -= 1
    return depth > 0


def _is_aside(sentence: str, match: re.Match[str]) -> bool:
    """The word attributes a figure: in parentheses, beside ':' or ',', or before a number (at
    most three words and a ':' between them: "measured ratios: 1.1")."""
    before = sentence[: match.start()].rstrip()
    previous = re.search(r"([A-Za-z]+)$", before)
    if previous and previous.group(1).lower() in NOT_AN_ASIDE:
        return False
    after = sentence[match.end() :].lstrip(" \t")
    return (
        _inside_parentheses(sentence, match.start())
        or before.endswith((":", ","))
        or after.startswith((":", ","))
        or re.match(r"[-+]?\d|(?:[A-Za-z]+\s+){0,2}[A-Za-z]+\s*:\s*[-+]?\d", after) is not None
    )


def offences(text: str) -> list[tuple[int, str]]:
    """(offset of the word, the sentence) for each offending sentence of ``text``."""
    found = []
    start = 0
    ends = [(m.start(), m.end()) for m in SENTENCE_END.finditer(text)]
    for end, next_start in [*ends, (len(text), len(text))]:
        sentence = text[start:end]
        if NUMBER.search(sentence):
            for match in WORD.finditer(sentence):
                if _is_aside(sentence, match):
                    found.append((start + match.start(), " ".join(sentence.split())))
                    break
        start = next_start
    return found


def texts(source: str) -> list[tuple[str, int, int, bool]]:
    """(text, first line, last line, lines joined by newlines) of every string constant
    (docstrings included) and every block of consecutive comment lines of ``source``."""
    found = [
        (node.value, node.lineno, node.end_lineno or node.lineno, False)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    block: list[str] = []
    first = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        row = token.start[0]
        text = token.string.lstrip("#").removeprefix(":").strip()
        if block and row == first + len(block):
            block.append(text)
            continue
        if block:
            found.append(("\n".join(block), first, first + len(block) - 1, True))
        block, first = [text], row
    if block:
        found.append(("\n".join(block), first, first + len(block) - 1, True))
    return found


def _line(text: str, offset: int, first: int, last: int, by_lines: bool, lines: list[str]):
    """The source line of the word at ``offset``: the same occurrence among the node's lines (a
    string's escapes and implicit concatenation shift its own newlines)."""
    if by_lines:
        return first + text.count("\n", 0, offset)
    index = len(WORD.findall(text[:offset]))
    occurrences = [row for row in range(first, last + 1) for _ in WORD.finditer(lines[row - 1])]
    return occurrences[index] if index < len(occurrences) else first


def offenders(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    name = path.relative_to(ROOT).as_posix()
    return [
        f"{name}:{_line(text, offset, first, last, by_lines, lines)}: {sentence[:160]}"
        for text, first, last, by_lines in texts(source)
        for offset, sentence in offences(text)
    ]


def test_no_docstring_or_comment_quotes_a_measured_figure():
    files = [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 50  # the walk found the package
    found = [line for path in files for line in offenders(path)]
    assert not found, (
        "measured figures belong in the generated reports, not in docstrings or comments: state "
        "the mechanism or a derived bound and point at the test that asserts it\n"
        + "\n".join(found)
    )


def test_no_doc_page_quotes_a_measured_figure():
    """The same rule on the documentation (docs/*.md and the README): a measured figure there is
    replaced by the report that makes it, or by the mechanism or closed form."""
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    assert len(pages) > 5
    found = [
        f"{page.relative_to(ROOT).as_posix()}:{text.count(chr(10), 0, offset) + 1}: "
        f"{sentence[:160]}"
        for page in pages
        for text in [page.read_text(encoding="utf-8")]
        for offset, sentence in offences(text)
    ]
    assert not found, "measured figures belong in the generated reports\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "the impact is handled late (measured: 0.12 in q on the ball at rtol = 1e-4).",
        "the depth grows (measured, e = 0.9, h = 5e-3, 0.12 deep at t = 100).",
        "it stops the run near it (at 0.9 h_e / c on 4 elements, measured).",
        "k (N - k) of them for e = 1 (measured).",
        "h = 2^-10: measured to round-off for N = 3, 5.",
        "the midpoint rule (measured flat at 0.1 for h_max = 0.05)",
        "Largest measured ratios: 1.1 for the velocity schemes",
        "measured 0.118",
        "the count no longer depends on rtol (atol = 1e-2 rtol), measured by hand.",
    ],
)
def test_a_hand_typed_measurement_fails(text):
    assert offences(text), text


@pytest.mark.parametrize(
    "text",
    [
        "Every check with its measured value, threshold and verdict (at most 100 columns).",
        "Every run is measured against the cached reference at rtol 1e-12.",
        "Step sizes (or tolerances) and the errors measured with them; k >= 3, all > 0.",
        "the late penetration is measured over [T/2, T] (e = 0.8).",
        "so an error or a decay rate measured on one trajectory (e = 0.8) says nothing.",
        "(the energies are of order 1 or their excess is measured relative to itself)",
        "Properties checked (each a row of the report: measured value, verdict)\n-------\n1 2 3",
        "A rate measured on the ball. It is 0.5 h, a closed form.",
        "the depth is O(h^2 |F|) (tests/test_persistent_contact.py)",
        "A run timed once has no measured spread (NaN)",
        "The errors measured at 1000 uniform times of one grid, for every method.",
    ],
)
def test_methodology_and_figures_without_the_word_pass(text):
    assert not offences(text), offences(text)


def test_the_offender_is_named_by_its_line(tmp_path, monkeypatch):
    module = tmp_path / "impactbench" / "module.py"
    module.parent.mkdir()
    module.write_text(
        '"""A model.\n\nIts depth is 0.12\n(measured).\n"""\n\n'
        "NOTE = (\n"
        '    "the runs agree. "\n'
        '    "The count is flat (measured by hand, atol = 1e-2 rtol)."\n'
        ")\n"
        "x = 1  # ratio 2.1\n"
        "# (largest measured)\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    lines = sorted(int(entry.split(":")[1]) for entry in offenders(module))
    # the docstring's word on line 4, the note's on line 9, the comment block of lines 11-12
    assert lines == [4, 9, 12]
