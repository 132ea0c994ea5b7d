"""Writing an app: one module for everything, one `set_status`/`request_input` everywhere, sandbox failures explained.

`tests/one_file_app.py` is an app as a newcomer writes it first: activity,
workflow, tool and `MCPServer` in one module, importing `set_status` and
`request_input` from the package root in all three places. It runs on workers and a
front in the test process, as `worker` and `serve` run it; how the `worker` command
reports a workflow its sandbox refuses is a process test.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_temporal import request_input, set_status
from tests.processes import CLI, REPO_ROOT, child_env
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

APP = "tests.one_file_app:app"
ELICIT: dict[str, Any] = {"elicitation": {}}
GO = {"action": "accept", "content": {"go": True}}


@pytest.fixture(scope="module")
def app_spec() -> str:
    return APP


def status_is(text: str) -> Callable[[dict[str, Any]], bool]:
    def shown(task: dict[str, Any]) -> bool:
        return task.get("statusMessage") == text or task["status"] not in ("working", "input_required")

    return shown


async def test_one_file_app_runs_its_workflow(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("shout", {"text": "hi"})
    done = await front_mcp.wait_for(created["taskId"], timeout=30)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "HI!"


async def test_status_and_question_from_workflow_code(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("shout", {"text": "hey", "confirm": True}, capabilities=ELICIT)
    asking = await front_mcp.wait_for(created["taskId"], {"input_required"}, timeout=30)
    assert asking["statusMessage"] == "waiting for the go-ahead"
    assert set(asking["inputRequests"]) == {"go"}
    assert "error" not in (await front_mcp.update(created["taskId"], {"go": GO})).body
    done = await front_mcp.wait_for(created["taskId"], timeout=30)
    assert done["result"]["content"][0]["text"] == "HEY!", done


async def test_status_from_an_activity_reaches_the_task(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("shout", {"text": "loud", "gate": str(gate)})
    shown = await front_mcp.wait_for(created["taskId"], status_is("shouting loud"), timeout=30)
    assert shown["status"] == "working" and shown["statusMessage"] == "shouting loud", shown
    (gate / "go").write_text("1")
    done = await front_mcp.wait_for(created["taskId"], timeout=30)
    assert done["result"]["content"][0]["text"] == "LOUD!", done


async def test_question_from_an_activity_is_asked_through_the_task(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("shout", {"text": "Soft", "ask": True}, capabilities=ELICIT)
    asking = await front_mcp.wait_for(created["taskId"], {"input_required"}, timeout=30)
    assert set(asking["inputRequests"]) == {"loud"}
    assert asking["inputRequests"]["loud"]["method"] == "elicitation/create"
    no = {"action": "accept", "content": {"go": False}}
    assert "error" not in (await front_mcp.update(created["taskId"], {"loud": no})).body
    done = await front_mcp.wait_for(created["taskId"], timeout=30)
    assert done["result"]["content"][0]["text"] == "Soft!", done


async def test_question_from_an_activity_needs_a_client_that_can_answer(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("shout", {"text": "x", "ask": True})  # no elicitation capability
    done = await front_mcp.wait_for(created["taskId"], timeout=30)
    assert done["status"] == "failed", done
    assert done["error"]["code"] == -32021


async def test_status_and_question_from_a_tool(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("whisper", {"text": "QUIET", "gate": str(gate)})
    shown = await front_mcp.wait_for(created["taskId"], status_is("whispering QUIET"), timeout=30)
    assert shown["statusMessage"] == "whispering QUIET", shown
    (gate / "go").write_text("1")
    done = await front_mcp.wait_for(created["taskId"], timeout=30)
    assert done["result"]["content"][0]["text"] == "quiet", done
    asked = await front_mcp.start("whisper", {"text": "Ask", "ask": True}, capabilities=ELICIT)
    asking = await front_mcp.wait_for(asked["taskId"], {"input_required"}, timeout=30)
    assert len(asking["inputRequests"]) == 1
    key = next(iter(asking["inputRequests"]))
    await front_mcp.update(asked["taskId"], {key: GO})
    assert (await front_mcp.wait_for(asked["taskId"], timeout=30))["result"]["content"][0]["text"] == "ask"


async def test_a_tool_called_synchronously_may_still_call_set_status(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("whisper", {"text": "Sync"}, tasks=False)
    assert reply.result["content"][0]["text"] == "sync", reply.body


async def test_outside_a_tool_an_activity_and_a_workflow_they_raise() -> None:
    with pytest.raises(RuntimeError, match="set_status works in a tool"):
        set_status("nobody sees this")
    with pytest.raises(RuntimeError, match="request_input works in a tool"):
        await request_input("key", {"method": "roots/list", "params": {}})


def test_a_workflow_the_sandbox_refuses_names_its_cause_and_the_fix_on_one_line(temporal: str) -> None:
    command = [*CLI, "worker", "--temporal", temporal, "--task-queue", f"broken-{uuid.uuid4()}"]
    command += ["--app", "tests.one_file_broken_app:app"]
    done = subprocess.run(command, cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("mcp-tasks-temporal:")]
    assert len(ours) == 1, done.stderr
    line = ours[0]
    assert "Failed validating workflow Naps" in line
    assert "tests/one_file_broken_app.py" in line and "datetime.now()" in line
    assert "fix:" in line
    assert "Traceback" not in done.stderr


def test_only_a_module_that_holds_the_server_gets_its_imports_passed_through() -> None:
    from mcp_tasks_temporal.temporal.sandbox import app_module_passthrough
    from tests.docs_release_workflow import ReleaseWorkflow
    from tests.one_file_app import OneFile

    assert {"httpx", "mcp", "uvicorn"} <= set(app_module_passthrough([OneFile]))
    assert not {"datetime", "asyncio", "tests"} & set(app_module_passthrough([OneFile]))
    assert app_module_passthrough([ReleaseWorkflow]) == ()
