"""Pure logic of the review sub-agent's tools: shape-duplicate detection and confinement to the tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_tasks_temporal.demo import review_files
from mcp_tasks_temporal.demo.duplicates import Location, find_duplicates, shape_lines

LOAD = """\
import json


def load(path):
    # read the settings file
    with open(path) as handle:
        data = json.load(handle)
    items = [entry.strip() for entry in data["items"] if entry]
    total = sum(len(item) for item in items)
    if total > 100:
        raise ValueError("too many")
    return items, total
"""

# The same block with other names, other literals, a blank line and a comment in between.
LOAD_COPY = """\
def settings(filename):
    with open(filename) as f:
        raw = json.load(f)

    rows = [r.strip() for r in raw["rows"] if r]  # trimmed
    size = sum(len(r) for r in rows)
    if size > 250:
        raise ValueError("way too many")
    return rows, size
"""

DIFFERENT = """\
def render(rows):
    out = []
    for row in rows:
        out.append("<li>" + row + "</li>")
    while len(out) < 3:
        out.append("<li></li>")
    return "\\n".join(out)
"""


def test_a_renamed_copy_is_one_block_in_both_places() -> None:
    found = find_duplicates([("a.py", LOAD), ("b.py", LOAD_COPY), ("c.py", DIFFERENT)])
    assert len(found) == 1
    # The `def` lines have the same shape too: the block starts there; the comment line does not count.
    assert found[0].lines == 8
    assert found[0].locations == [Location("a.py", 4, 12), Location("b.py", 1, 9)]


def test_every_place_of_a_block_is_reported() -> None:
    found = find_duplicates([("a.py", LOAD), ("b.py", LOAD_COPY), ("d/e.py", "x = 1\n" + LOAD_COPY)])
    assert [loc.file for loc in found[0].locations] == ["a.py", "b.py", "d/e.py"]
    assert found[0].locations[2] == Location("d/e.py", 2, 10)


def test_code_of_another_shape_is_not_a_duplicate() -> None:
    assert find_duplicates([("a.py", LOAD), ("c.py", DIFFERENT)]) == []


def test_blocks_shorter_than_min_lines_are_not_reported() -> None:
    assert find_duplicates([("a.py", LOAD), ("b.py", LOAD_COPY)], min_lines=9) == []
    assert find_duplicates([("a.py", LOAD), ("b.py", LOAD_COPY)], min_lines=8)[0].lines == 8


def test_a_copy_inside_the_same_file_counts_but_a_repeated_line_does_not() -> None:
    twice = LOAD + "\n\n" + LOAD_COPY
    found = find_duplicates([("a.py", twice)])
    assert [(loc.start_line, loc.end_line) for loc in found[0].locations] == [(4, 12), (15, 23)]
    repeated = "\n".join(f"values.append(compute(item, {n}, 'label', other))" for n in range(20))
    assert find_duplicates([("r.py", repeated)]) == []


def test_boilerplate_below_the_token_threshold_is_ignored() -> None:
    closing = "}\n" * 3 + "return 0;\n" + "}\n" * 3
    assert find_duplicates([("a.c", "int f() {\n" + closing), ("b.c", "int g() {\n" + closing)]) == []


def test_other_languages_are_compared_by_their_tokens() -> None:
    block = """\
function total(items) {
  let sum = 0;
  for (const item of items) {
    if (item.price > 10) { sum += item.price * item.count; }
  }
  return sum; // done
}
"""
    copy = block.replace("total", "amount").replace("items", "rows").replace("10", "99")
    found = find_duplicates([("a.js", block), ("b.ts", "\n" + copy)])
    assert [(loc.file, loc.start_line) for loc in found[0].locations] == [("a.js", 1), ("b.ts", 2)]


def test_invalid_python_falls_back_to_the_generic_tokenizer() -> None:
    lines = shape_lines("def f(:\n    x = 'unterminated\n", python=True)
    assert [line.number for line in lines] == [1, 2]


def test_min_lines_must_be_positive() -> None:
    with pytest.raises(ValueError):
        find_duplicates([], min_lines=0)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text(LOAD)
    (root / "src" / "b.py").write_text(LOAD_COPY)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "logo.bin").write_bytes(b"\0\1\2")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    return root


def test_files_outside_the_tree_are_refused(tree: Path) -> None:
    for path in ("../secret.txt", "escape.txt", str(tree.parent / "secret.txt"), "src/../../secret.txt"):
        with pytest.raises(review_files.OutsideTree):
            review_files.read_file(tree, path)
    with pytest.raises(review_files.OutsideTree):
        review_files.list_files(tree, "..")
    with pytest.raises(review_files.OutsideTree):
        review_files.duplicates_in(tree, "../")
    assert "escape.txt" not in review_files.list_files(tree)


def test_listing_skips_hidden_folders_and_reading_numbers_lines(tree: Path) -> None:
    assert review_files.list_files(tree) == ["logo.bin", "src/a.py", "src/b.py"]
    assert review_files.read_file(tree, "src/b.py", 2, 3).splitlines() == [
        "    2      with open(filename) as f:",
        "    3          raw = json.load(f)",
    ]
    with pytest.raises(review_files.OutsideTree):
        review_files.read_file(tree, "logo.bin")
    with pytest.raises(review_files.OutsideTree):
        review_files.read_file(tree, "missing.py")


def test_duplicates_in_a_tree_name_files_relative_to_it(tree: Path) -> None:
    found = review_files.duplicates_in(tree)
    assert [loc.file for loc in found[0].locations] == ["src/a.py", "src/b.py"]


def test_the_reviewed_directory_must_lie_under_the_review_root(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(review_files.REVIEW_ROOT_ENV, str(tree.parent))
    assert review_files.resolve_review_path("project") == tree.resolve()
    assert review_files.resolve_review_path(str(tree / "src")) == (tree / "src").resolve()
    for outside in ("..", "/", "project/src/a.py", "nowhere"):
        with pytest.raises(review_files.OutsideTree):
            review_files.resolve_review_path(outside)
