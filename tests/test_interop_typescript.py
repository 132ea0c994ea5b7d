"""The TypeScript SDK 1.x client (`@modelcontextprotocol/sdk` 1.32, protocol 2025-11-25) against live servers.

Its `client.experimental.tasks` drives the tasks the server keeps in Temporal:
`callToolStream` with `task`, `getTask`, `getTaskResult`, `listTasks`,
`cancelTask`, and a question answered by its own elicitation handler while it
waits on `tasks/result`. The flows run in one Node process per app
(`interop/typescript/sdk_flows.mjs`); each is checked here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Stack
from tests.interop_node import run_node
from tests.processes import start_front, start_worker

WORKFLOW_APP = "tests.workflow_fixture_app:app"
RELATED_TASK = "io.modelcontextprotocol/related-task"


@pytest.fixture(scope="module")
def tool_report(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    gate = tmp_path_factory.mktemp("ts-gate")
    return run_node("sdk_flows.mjs", "tools", stack.url, str(gate))


@pytest.fixture(scope="module")
def workflow_stack(workdir: Path, temporal: str) -> Iterator[Stack]:
    stack = Stack(workdir, temporal, task_queue=f"ts-wf-{uuid.uuid4()}")
    try:
        stack.workers.append(start_worker(workdir, temporal, stack.task_queue, app=WORKFLOW_APP))
        stack.fronts.append(start_front(workdir, temporal, stack.task_queue, app=WORKFLOW_APP))
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def workflow_report(workflow_stack: Stack) -> dict[str, Any]:
    return run_node("sdk_flows.mjs", "workflows", workflow_stack.url)


def _flow(report: dict[str, Any], name: str) -> dict[str, Any]:
    outcome: dict[str, Any] = report[name]
    assert "exception" not in outcome, outcome["exception"]
    return outcome


def test_negotiation(tool_report: dict[str, Any]) -> None:
    assert tool_report["serverCapabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    support = tool_report["taskSupport"]
    assert (support["double"], support["needs_task"], support["never_task"], support["echo"]) == (
        "optional",
        "required",
        "forbidden",
        None,
    )


def test_plain_call(tool_report: dict[str, Any]) -> None:
    assert _flow(tool_report, "plain")["structuredContent"] == {"value": 4}


def test_question_on_a_plain_call(tool_report: dict[str, Any]) -> None:
    seen = _flow(tool_report, "plainQuestion")
    assert seen["result"]["content"][0]["text"] == "accept after 1 steps"
    assert seen["elicitations"] == [{"message": "Go on?", "relatedTask": None}]


def test_explicit_task(tool_report: dict[str, Any]) -> None:
    seen = _flow(tool_report, "task")
    assert seen["types"][0] == "taskCreated"
    assert seen["types"][-1] == "result"
    assert seen["result"]["structuredContent"] == {"value": 42}
    assert seen["get"]["status"] == "completed"
    assert seen["payload"]["structuredContent"] == {"value": 42}
    assert seen["payload"]["_meta"][RELATED_TASK] == {"taskId": seen["taskId"]}
    assert seen["listed"] is True


def test_question_answered_by_the_clients_elicitation_handler(tool_report: dict[str, Any]) -> None:
    seen = _flow(tool_report, "question")
    assert seen["error"] is None, seen
    assert seen["result"]["content"][0]["text"] == "accept"
    assert seen["elicitations"] == [{"message": "Go?", "relatedTask": {"taskId": seen["taskId"]}}]


def test_cancel(tool_report: dict[str, Any]) -> None:
    seen = _flow(tool_report, "cancel")
    assert seen["cancelled"]["taskId"] == seen["taskId"]
    assert seen["after"]["status"] == "cancelled"
    assert seen["error"] is not None  # the stream ends with the SDK's "was cancelled"


def test_failing_tools(tool_report: dict[str, Any]) -> None:
    outcome = _flow(tool_report, "failing")
    assert outcome["failed"]["after"]["status"] == "failed"
    assert outcome["failed"]["result"] is None
    assert outcome["toolError"]["result"]["isError"] is True


def test_required_task_tool_is_not_called_plainly(tool_report: dict[str, Any]) -> None:
    assert _flow(tool_report, "requiredWithoutTask")["refused"] is True


def test_workflow_tools(workflow_report: dict[str, Any]) -> None:
    assert _flow(workflow_report, "plain")["content"][0]["text"] == "Hello, Ada!"
    plain = _flow(workflow_report, "plainQuestion")
    assert plain["result"]["structuredContent"]["approve"] == {"action": "accept", "content": {"approve": True}}
    assert {e["message"] for e in plain["elicitations"]} == {"Deploy?", "Reviewer?"}
    asked = _flow(workflow_report, "question")
    assert asked["error"] is None, asked
    answers = asked["result"]["structuredContent"]
    assert answers["approve"] == {"action": "accept", "content": {"approve": True}}
    assert {e["message"] for e in asked["elicitations"]} == {"Deploy?", "Reviewer?"}
    assert all(e["relatedTask"] == {"taskId": asked["taskId"]} for e in asked["elicitations"])
    failed = _flow(workflow_report, "failing")
    assert failed["after"]["status"] == "failed"
    assert "Release window closed" in failed["after"]["statusMessage"]
