"""`@modelcontextprotocol/inspector` 2.12's CLI at `--protocol-era legacy` (2025-11-25) against live servers.

The one-shot CLI calls a tool plainly, or as a 2025-11-25 task when the tool's
`taskSupport` is "required" (`callToolStream`, then `tasks/result`). It
declares no `elicitation` (it cannot prompt), so a tool that asks must end
with a clear error naming the missing capability rather than hang. It has no
`tasks/*` methods: `--method tasks/cancel` (or `tasks/update`, `tasks/get`) is
refused by the CLI before it connects ("Unsupported method", exit status 1).
Its error envelope keeps the server's message but not the JSON-RPC code, so
errors are told apart by what they name.

The package's connection CLI, `mcpdo`, answers questions and cancels at
`--era legacy` as well: tests/interop/test_inspector.py drives it at both eras
(a question on a plain call and from a workflow tool, and a call in flight
cancelled from a second connection after `tasks/list` named its task).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Stack
from tests.interop_node import run_inspector
from tests.processes import start_front, start_worker

WORKFLOW_APP = "tests.workflow_fixture_app:app"
RELATED_TASK = "io.modelcontextprotocol/related-task"


@pytest.fixture(scope="module")
def workflow_stack(workdir: Path, temporal: str) -> Iterator[Stack]:
    stack = Stack(workdir, temporal, task_queue=f"inspector-wf-{uuid.uuid4()}")
    try:
        stack.workers.append(start_worker(workdir, temporal, stack.task_queue, app=WORKFLOW_APP))
        stack.fronts.append(start_front(workdir, temporal, stack.task_queue, app=WORKFLOW_APP))
        yield stack
    finally:
        stack.stop()


def _call(url: str, tool: str, *args: str) -> tuple[int, dict[str, Any]]:
    return run_inspector(url, "--method", "tools/call", "--tool-name", tool, *args)


def test_tools_list_shows_task_support(stack: Stack) -> None:
    status, listed = run_inspector(stack.url, "--method", "tools/list")
    assert status == 0, listed
    tools = {tool["name"]: tool for tool in listed["result"]["tools"]}
    assert tools["needs_task"]["execution"] == {"taskSupport": "required"}


def test_plain_call(stack: Stack) -> None:
    status, reply = _call(stack.url, "double", "--tool-arg", "x=2")
    assert status == 0, reply
    assert reply["result"]["structuredContent"] == {"value": 4}


def test_a_required_task_tool_runs_as_a_task(stack: Stack) -> None:
    status, reply = _call(stack.url, "needs_task", "--tool-arg", "x=2")
    assert status == 0, reply
    result = reply["result"]
    assert result["structuredContent"] == {"result": 6}
    assert "taskId" in result["_meta"][RELATED_TASK]


def test_a_question_to_a_client_that_cannot_answer_is_a_clear_error(stack: Stack) -> None:
    # Both run as tasks held on the call: the one thing this client lacks is `elicitation`.
    for args in (["ask_one_midway"], ["numbered_steps", "--tool-args-json", '{"steps": 1, "pause": 0}']):
        status, reply = _call(stack.url, *args)
        assert status != 0
        assert "'elicitation' capability" in reply["error"]["message"]


def test_failing_tools(stack: Stack) -> None:
    status, reply = _call(stack.url, "protocol_error")
    assert status != 0
    assert reply["error"]["message"] == "backend refused"
    status, reply = _call(stack.url, "tool_error")
    assert status != 0
    assert reply["result"]["isError"] is True


def test_workflow_tools(workflow_stack: Stack) -> None:
    status, reply = _call(workflow_stack.url, "greet", "--tool-arg", "name=Ada")
    assert status == 0, reply
    assert reply["result"]["content"][0]["text"] == "Hello, Ada!"
    status, reply = _call(workflow_stack.url, "nothing")  # taskSupport "required"
    assert status == 0, reply
    assert "taskId" in reply["result"]["_meta"][RELATED_TASK]
    status, reply = _call(workflow_stack.url, "questions", "--tool-args-json", '{"kinds": ["elicitation"]}')
    assert status != 0
    assert "elicitation" in reply["error"]["message"] or "task" in reply["error"]["message"]
