"""File access for the review sub-agent, confined to the tree under review.

Every path the model names is resolved (symlinks included) and must stay inside the
reviewed directory; anything else is refused with a message the model can act on.
The reviewed directory itself must lie under the server's review root.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from mcp_tasks_temporal.demo.duplicates import Duplicate, find_duplicates
from mcp_tasks_temporal.ops.settings import variable

REVIEW_ROOT_ENV: Final = "MCP_TASKS_REVIEW_ROOT"
MAX_LISTED: Final = 500
MAX_READ_BYTES: Final = 64 * 1024
MAX_SCANNED_FILES: Final = 2000
MAX_SCANNED_BYTES: Final = 512 * 1024
"""Larger files are generated or data, not code worth comparing."""
SKIPPED_DIRS: Final = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", "dist"}
)
CODE_SUFFIXES: Final = frozenset(
    ".py .pyi .js .jsx .ts .tsx .go .rs .java .kt .c .h .cc .cpp .hpp .cs .rb .php .swift .scala .sh .sql".split()
)


class OutsideTree(ValueError):
    """A path that is not inside the tree under review, or not there at all."""


def review_root() -> Path:
    """The directory every review must lie under: `$MCP_TASKS_REVIEW_ROOT`, else the worker's directory."""
    return Path(variable(REVIEW_ROOT_ENV) or Path.cwd()).resolve()


def resolve_review_path(path: str) -> Path:
    """The directory to review, checked against the review root."""
    root = review_root()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise OutsideTree(f"{path!r} is outside the review root of this server")
    if not target.is_dir():
        raise OutsideTree(f"{path!r} is not a directory under the review root of this server")
    return target


def inside(tree: Path, relative: str) -> Path:
    """`relative` resolved inside `tree`, or `OutsideTree`."""
    if Path(relative).is_absolute():
        raise OutsideTree(f"{relative!r} is absolute: name files relative to the reviewed directory")
    target = (tree / relative).resolve()
    if not target.is_relative_to(tree.resolve()):
        raise OutsideTree(f"{relative!r} is outside the reviewed directory")
    if not target.exists():
        raise OutsideTree(f"{relative!r} does not exist in the reviewed directory")
    return target


def _walk(tree: Path, start: Path) -> Iterator[Path]:
    for directory, subdirs, files in os.walk(start):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS and not d.startswith("."))
        base = Path(directory)
        for name in sorted(files):
            candidate = base / name
            # A symlink may point out of the tree: never follow one there.
            if candidate.resolve().is_relative_to(tree):
                yield candidate


def list_files(tree: Path, relative: str = ".") -> list[str]:
    """Files under `relative`, as paths relative to the tree, hidden and vendored folders skipped."""
    start = inside(tree, relative)
    if start.is_file():
        return [start.relative_to(tree).as_posix()]
    listed: list[str] = []
    for path in _walk(tree, start):
        if len(listed) == MAX_LISTED:
            listed.append(f"... (more than {MAX_LISTED} files: list a subdirectory)")
            break
        listed.append(path.relative_to(tree).as_posix())
    return listed


def read_file(tree: Path, relative: str, start_line: int = 1, end_line: int | None = None) -> str:
    """Lines `start_line`..`end_line` of a text file, each prefixed with its number."""
    target = inside(tree, relative)
    if not target.is_file():
        raise OutsideTree(f"{relative!r} is a directory: use list_files")
    data = target.read_bytes()
    if b"\0" in data[:4096]:
        raise OutsideTree(f"{relative!r} is a binary file")
    lines = data.decode(errors="replace").splitlines()
    first = max(start_line, 1)
    last = len(lines) if end_line is None else min(end_line, len(lines))
    numbered: list[str] = []
    size = 0
    for number in range(first, last + 1):
        line = f"{number:>5}  {lines[number - 1]}"
        size += len(line) + 1
        if size > MAX_READ_BYTES:
            numbered.append(f"... (truncated: read from line {number} on)")
            break
        numbered.append(line)
    return "\n".join(numbered) if numbered else f"({relative} has {len(lines)} lines)"


def duplicates_in(tree: Path, relative: str = ".", min_lines: int = 5) -> list[Duplicate]:
    """Blocks of the same shape in several places among the code files under `relative`."""
    start = inside(tree, relative)
    sources: list[tuple[str, str]] = []
    for path in _walk(tree, start) if start.is_dir() else iter([start]):
        if path.suffix not in CODE_SUFFIXES or path.stat().st_size > MAX_SCANNED_BYTES:
            continue
        sources.append((path.relative_to(tree).as_posix(), path.read_text(errors="replace")))
        if len(sources) == MAX_SCANNED_FILES:
            break
    return find_duplicates(sources, min_lines=max(min_lines, 2))
