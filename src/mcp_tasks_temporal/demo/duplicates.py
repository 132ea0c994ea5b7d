"""Blocks of code with the same shape in several places (copy-paste detection).

Each source line is reduced to its shape: names become `N`, numbers `0`, strings `S`,
comments and blank lines vanish, keywords and operators stay. Two places whose next
`min_lines` shapes are equal hold the same block even when the copy renamed its
variables or changed a literal; runs of such windows that advance together in every
place are merged into one block, reported with its real line numbers.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import re
import tokenize
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

MIN_LINES = 5
MIN_TOKENS = 24
"""A window shorter than this many tokens (closing braces, `pass`, imports) is too common to mean anything."""

# Words that carry structure in most C-like languages; every other word is a name.
_COMMON_KEYWORDS = frozenset(
    "if else elif for while do return break continue switch case default try catch finally throw raise "
    "class def function fn func let const var new delete import from export public private protected static "
    "async await yield struct enum interface impl match with in is not and or lambda pass".split()
)
_GENERIC_TOKEN = re.compile(
    r"""(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)"""
    r"|(?P<number>\b\d[\w.]*)"
    r"|(?P<word>[A-Za-z_$][\w$]*)"
    r"|(?P<op>\S)"
)
_LINE_COMMENT = re.compile(r"(//|#|--).*$")


@dataclass(frozen=True)
class Location:
    file: str
    start_line: int
    end_line: int


@dataclass
class Duplicate:
    """One block found in two or more places."""

    lines: int
    """Significant (non-blank, non-comment) lines in the block."""
    locations: list[Location] = field(default_factory=list[Location])


@dataclass(frozen=True)
class _Line:
    number: int
    shape: str
    tokens: int


def shape_lines(source: str, *, python: bool) -> list[_Line]:
    """The significant lines of `source`, each reduced to its shape."""
    if python:
        try:
            return _python_shapes(source)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass  # not valid Python after all: the generic tokenizer still finds copies
    return _generic_shapes(source)


def _python_shapes(source: str) -> list[_Line]:
    by_line: dict[int, list[str]] = defaultdict(list)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        kind, text, (row, _) = token.type, token.string, token.start
        if kind == tokenize.NAME:
            by_line[row].append(text if keyword.iskeyword(text) or keyword.issoftkeyword(text) else "N")
        elif kind == tokenize.NUMBER:
            by_line[row].append("0")
        elif kind == tokenize.STRING or kind in _FSTRING_TOKENS:
            if not by_line[row] or by_line[row][-1] != "S":
                by_line[row].append("S")
        elif kind == tokenize.OP:
            by_line[row].append(text)
    return [_Line(row, " ".join(parts), len(parts)) for row, parts in sorted(by_line.items()) if parts]


_FSTRING_TOKENS = frozenset(
    getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, name)
)


def _generic_shapes(source: str) -> list[_Line]:
    lines: list[_Line] = []
    for number, raw in enumerate(source.splitlines(), start=1):
        text = _LINE_COMMENT.sub("", raw).strip()
        parts: list[str] = []
        for match in _GENERIC_TOKEN.finditer(text):
            kind = match.lastgroup
            value = match.group()
            if kind == "string":
                parts.append("S")
            elif kind == "number":
                parts.append("0")
            elif kind == "word":
                parts.append(value if value in _COMMON_KEYWORDS else "N")
            else:
                parts.append(value)
        if parts:
            lines.append(_Line(number, " ".join(parts), len(parts)))
    return lines


def find_duplicates(
    files: Iterable[tuple[str, str]], *, min_lines: int = MIN_LINES, min_tokens: int = MIN_TOKENS
) -> list[Duplicate]:
    """Blocks of at least `min_lines` significant lines that occur in more than one place.

    Args:
        files: `(name, source)` pairs; names ending in `.py` are tokenized as Python.
        min_lines: The shortest block reported.
        min_tokens: Windows with fewer tokens than this are ignored as boilerplate.

    Returns:
        The blocks, largest first; each lists every place it occurs (at least two).
    """
    if min_lines < 1:
        raise ValueError("min_lines must be at least 1")
    shaped = [(name, shape_lines(source, python=PurePosixPath(name).suffix == ".py")) for name, source in files]
    windows: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for file_index, (_, lines) in enumerate(shaped):
        for start in range(len(lines) - min_lines + 1):
            window = lines[start : start + min_lines]
            if sum(line.tokens for line in window) < min_tokens:
                continue
            if min_lines > 1 and len({line.shape for line in window}) == 1:
                continue  # one line repeated (a table, a list of calls) is not a copied block
            digest = hashlib.blake2b("\n".join(line.shape for line in window).encode(), digest_size=16).digest()
            windows[digest].append((file_index, start))

    groups = [_apart(places, min_lines) for places in windows.values()]
    groups = sorted((group for group in groups if len(group) > 1), key=lambda group: group[0])
    # A block is a run of windows whose places all advance by one line together.
    open_blocks: dict[tuple[tuple[int, int], ...], list[int]] = {}
    blocks: list[tuple[tuple[tuple[int, int], ...], list[int]]] = []
    for places in groups:
        previous = tuple((file_index, start - 1) for file_index, start in places)
        extent = open_blocks.pop(previous, None)
        if extent is None:
            extent = [0]
            blocks.append((places, extent))
        extent[0] += 1
        open_blocks[places] = extent

    duplicates: list[Duplicate] = []
    for first_places, extent in blocks:
        length = min_lines + extent[0] - 1
        locations: list[Location] = []
        for file_index, start in first_places:
            name, lines = shaped[file_index]
            locations.append(Location(name, lines[start].number, lines[start + length - 1].number))
        duplicates.append(Duplicate(lines=length, locations=locations))
    duplicates.sort(key=lambda duplicate: (-duplicate.lines, duplicate.locations[0].file))
    return duplicates


def _apart(places: Sequence[tuple[int, int]], min_lines: int) -> tuple[tuple[int, int], ...]:
    """Drop places that overlap an earlier one in the same file (a repeated line is not a copy)."""
    kept: list[tuple[int, int]] = []
    for file_index, start in sorted(places):
        if kept and kept[-1][0] == file_index and start - kept[-1][1] < min_lines:
            continue
        kept.append((file_index, start))
    return tuple(kept)
