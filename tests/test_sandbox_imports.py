"""What the workflow sandbox imports again for each workflow run, with another package's import hook in the process.

`py-key-value-aio` (which FastMCP brings) turns on beartype's import hook when it is imported, for the whole
process. Every import goes through the hook from then on, those the sandbox makes for a workflow run too; had
beartype stayed sandboxed, the hook would have imported beartype anew inside every run's sandbox. A finder at
the head of `sys.meta_path` sees every module the import system has to look for: none of beartype's may be among
them while a recorded history replays.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.workflows.task_feed import TaskFeedWorkflow

pytestmark = pytest.mark.anyio

HISTORY = Path(__file__).parent / "histories" / "feed_shard_continued.json"
"""A feed shard's: it runs in the sandbox (the tool task workflow runs outside it, so imports nothing per run)."""


class LookedFor:
    """A meta path finder that finds nothing and remembers what it was asked for."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        self.names.append(name)
        return None


@pytest.fixture
def looked_for() -> Iterator[LookedFor]:
    finder = LookedFor()
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)


async def test_beartypes_import_hook_does_not_import_beartype_again_in_every_sandbox(looked_for: LookedFor) -> None:
    importlib.import_module("key_value.aio")  # turns beartype's import hook on, for the whole process

    history = WorkflowHistory.from_json("history", HISTORY.read_text())
    looked_for.names.clear()
    await Replayer(workflows=[TaskFeedWorkflow], workflow_runner=workflow_runner()).replay_workflow(history)
    assert looked_for.names, "the sandbox imported the workflows' modules anew"
    assert [name for name in looked_for.names if name.partition(".")[0] == "beartype"] == []
