"""The examples in docs/contributing.md's "Writing a test" are tests of the suite, quoted as they are."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUOTED = re.compile(r"```python\n# (?P<path>tests/\S+\.py)\n(?P<code>.*?)```", re.DOTALL)


def test_each_example_is_a_test_of_the_suite_as_written() -> None:
    examples = list(QUOTED.finditer((REPO / "docs" / "contributing.md").read_text()))
    assert len(examples) >= 4, "an example for each level: pure logic, workflows, the protocol, processes"
    for example in examples:
        source = (REPO / example["path"]).read_text()
        assert example["code"] in source, f"the example from {example['path']} no longer matches it"
        assert re.search(r"^(async )?def test_", example["code"], re.MULTILINE), "an example is a test"
