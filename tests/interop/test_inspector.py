"""`@modelcontextprotocol/inspector` 2.12's CLIs against live front servers.

The one-shot CLI (`--cli`, here at `--protocol-era modern`) declares the tasks
extension and drives a task tool's task to its result. It cannot do more with a
task: it builds its client with `elicit: false`, so it declares no `elicitation`
and a tool that says it asks is refused before it runs (-32021, exit status 1);
`--method tasks/cancel`, `tasks/update`, `tasks/get` are refused by the CLI
itself before it connects ("Unsupported method", exit status 1: its `--method`
takes only initialize, tools/*, resources/*, prompts/*, logging/setLevel,
skills/* and the catalog verbs), and it reads no answers from stdin or a file.
Its exit statuses: 0 a result, 1 an error, 5 a tool result with `isError: true`.

The package's connection CLI, `mcpdo` (experimental), keeps connections open in a
daemon and advertises `elicitation` (`connect --elicit form`). It answers
questions: a call whose task asks returns an `elicitationPending`, and
`elicitation/respond ID field:=value` answers it (the next question, or the
result). It sends `tasks/get`, `tasks/update` and `tasks/cancel` for a task id,
and `tasks/list`. At `--era modern` its own `tools/call` never shows the id of the
task it follows (not in its output, not in `elicitationPending`, and its
`tasks/list` lists only the tasks that command itself saw), so it cancels or
answers a task whose id it is given; at `--era legacy` the server's `tasks/list`
shows it to a second connection of the same principal (`--header "Authorization: Bearer ..."`; without
authentication each connection lists only its own session's tasks), which cancels the call in flight. Two limits seen:
a second command on the connection a call is waiting on aborts that call's
requests (so the call in flight and the cancel use two connections, named by the
URL); at legacy, `tools/call --task` of a tool that asks never shows the question
(sent on `tasks/result`) as an `elicitationPending`: the call waits, and in our
runs either was still waiting after 60 s or ended after about 40 s with the
front's -32603 "Task service unavailable, try again" (the front logging a
cancelled Temporal call), so it is not tested; the same tool called without
`--task` asks through `elicitation/create` on the call's stream and is answered.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Stack
from tests.interop.conftest import YES
from tests.interop.node import JS_DIR, NODE_BIN, NodeClients
from tests.processes import wait_until
from tests.wire import HttpMcp, TaskCalls

INSPECTOR = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
MCPDO = "node_modules/@modelcontextprotocol/inspector/clients/mcpdo/build/mcp-bin.js"


def inspector(node: NodeClients, url: str, tool: str, **arguments: Any) -> tuple[int, dict[str, Any]]:
    done: subprocess.CompletedProcess[str] = node.run(
        INSPECTOR,
        "--cli",
        url,
        "--protocol-era",
        "modern",
        "--method",
        "tools/call",
        "--tool-name",
        tool,
        "--tool-args-json",
        json.dumps(arguments),
        "--format",
        "json",
    )
    # A result goes to stdout, an error envelope to stderr.
    output = [line for line in (done.stdout + "\n" + done.stderr).splitlines() if line.startswith("{")]
    assert output, f"exit {done.returncode}, no JSON output\n{done.stdout}\n{done.stderr[-4000:]}"
    reply: dict[str, Any] = json.loads(output[0])
    return done.returncode, reply


def test_a_plain_call(stack: Stack, node: NodeClients) -> None:
    status, reply = inspector(node, stack.url, "echo", text="plain")
    assert status == 0, reply
    assert reply["result"]["content"][0]["text"] == "plain"


def test_a_task_tool_is_driven_to_its_result(stack: Stack, node: NodeClients) -> None:
    # needs_task is policy="required": without the tasks extension the call would be -32021.
    status, reply = inspector(node, stack.url, "needs_task", x=5)
    assert status == 0, reply
    assert reply["result"]["content"][0]["text"] == "15"
    status, reply = inspector(node, stack.url, "double", x=21)
    assert status == 0, reply
    assert reply["result"]["structuredContent"] == {"value": 42}


def test_a_tool_that_asks_is_refused_before_it_runs(stack: Stack, node: NodeClients, gate: Path) -> None:
    status, reply = inspector(node, stack.url, "approve_step", gate=str(gate))
    assert status == 1, reply
    assert "error" in reply
    assert not (gate / "work-runs").exists(), "the step must not have run"


def test_a_failing_tool(stack: Stack, node: NodeClients) -> None:
    status, reply = inspector(node, stack.url, "tool_error")
    assert status == 5, reply
    assert reply["result"]["isError"] is True
    status, reply = inspector(node, stack.url, "protocol_error")
    assert status == 1, reply
    assert "error" in reply


def test_workflow_tools(wf_stack: Stack, node: NodeClients) -> None:
    status, reply = inspector(node, wf_stack.url, "greet", name="Ada")
    assert status == 0, reply
    assert reply["result"]["content"][0]["text"] == "Hello, Ada!"
    status, reply = inspector(node, wf_stack.url, "declared_questions")
    assert status == 1, reply
    assert "error" in reply


def test_the_one_shot_cli_refuses_tasks_methods(stack: Stack, node: NodeClients) -> None:
    for method in ("tasks/cancel", "tasks/update", "tasks/get"):
        done = node.run(
            INSPECTOR, "--cli", stack.url, "--protocol-era", "modern", "--method", method, "--format", "json"
        )
        assert done.returncode == 1, done.stdout
        assert f"Unsupported method: {method}" in done.stderr


# -- mcpdo -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mcpdo:
    """One mcpdo daemon (its own HOME) and its connections, each named by the URL it was opened with."""

    node: NodeClients
    env: dict[str, str]

    def command(self, *args: str) -> list[str]:
        return [str(NODE_BIN / "node"), MCPDO, "--format", "json", *args]

    def __call__(self, *args: str) -> dict[str, Any]:
        done = self.node.run(*self.command(*args)[1:], env=self.env)
        start = done.stdout.find("{")
        assert done.returncode == 0 and start >= 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-4000:]}"
        reply: dict[str, Any] = json.loads(done.stdout[start:])
        return reply

    def connect(self, url: str, era: str, who: str, *, token: str | None = None) -> str:
        """Open a connection of its own (the query names it; the server ignores it); returns its name."""
        name = f"{url}?as={who}"
        bearer = ["--header", f"Authorization: Bearer {token}"] if token is not None else []
        assert self("connect", name, "--era", era, "--elicit", "form", *bearer)["protocolEra"] == era
        return name

    def on(self, connection: str, *args: str) -> dict[str, Any]:
        return self("--connection", connection, *args)

    def answer_all(self, connection: str, reply: dict[str, Any], fields: dict[str, list[str]]) -> dict[str, Any]:
        """Answer each question in turn, by its message, until the call returns its result."""
        asked: list[str] = []
        while "elicitationPending" in reply:
            pending = reply["elicitationPending"]
            asked.append(pending["message"])
            reply = self.on(connection, "elicitation/respond", pending["elicitationId"], *fields[pending["message"]])
        reply["asked"] = asked
        return reply


@pytest.fixture(scope="module")
def mcpdo(node: NodeClients, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mcpdo]:
    home = tmp_path_factory.mktemp("mcpdo-home")
    env = {"HOME": str(home), "MCP_ALLOW_DEFAULT_CONNECTION": "1", "MCP_INSPECTOR_SECRET_STORE": "memory"}
    try:
        yield Mcpdo(node, env)
    finally:
        node.run(MCPDO, "daemon", "stop", env=env)


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_question_is_answered_through_mcpdo_elicitation_respond(
    stack: Stack, mcpdo: Mcpdo, tmp_path: Path, era: str
) -> None:
    asker = mcpdo.connect(stack.url, era, f"asker-{era}")
    asked = mcpdo.on(asker, "tools/call", "approve_step", f"gate:={tmp_path}")
    assert asked["elicitationPending"]["message"] == "Go on?"
    # modern: a question of the task (tasks/update); legacy: elicitation/create on the call's stream.
    origin = {"modern": "task-input-required", "legacy": "server-request"}[era]
    assert asked["elicitationPending"]["origin"] == origin
    result = mcpdo.on(asker, "elicitation/respond", asked["elicitationPending"]["elicitationId"], "approve:=true")
    assert result["content"][0]["text"] == "approved"
    assert (tmp_path / "work-runs").read_text() == "1"


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_workflow_tool_with_questions_through_mcpdo(wf_stack: Stack, mcpdo: Mcpdo, era: str) -> None:
    asker = mcpdo.connect(wf_stack.url, era, f"wf-asker-{era}")
    first = mcpdo.on(asker, "tools/call", "questions")
    result = mcpdo.answer_all(asker, first, {"Deploy?": ["approve:=true"], "Reviewer?": ["{}"]})
    assert sorted(result["asked"]) == ["Deploy?", "Reviewer?"]
    assert result["structuredContent"]["approve"] == {"action": "accept", "content": YES}


@pytest.mark.anyio
async def test_a_question_answered_with_mcpdo_tasks_update(stack: Stack, mcpdo: Mcpdo, gate: Path) -> None:
    async with httpx.AsyncClient() as http:
        calls = TaskCalls(HttpMcp(stack.url, http))
        created = await calls.start("approve_step", {"gate": str(gate)}, capabilities={"elicitation": {}})
        task_id = created["taskId"]
        await calls.wait_for(task_id, {"input_required"}, timeout=30)
        operator = mcpdo.connect(stack.url, "modern", "updater")
        answer = {"approve": {"action": "accept", "content": YES}}
        updated = mcpdo.on(operator, "tasks/update", task_id, "--input-responses", json.dumps(answer))
        assert updated == {"updated": True, "taskId": task_id}
        done = await calls.wait_for(task_id, timeout=30)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "approved", done


@pytest.mark.anyio
async def test_cancel_a_task_by_its_id_with_mcpdo(stack: Stack, mcpdo: Mcpdo, gate: Path) -> None:
    async with httpx.AsyncClient() as http:
        calls = TaskCalls(HttpMcp(stack.url, http))
        task_id = (await calls.start("gated", {"gate": str(gate)}))["taskId"]
        await calls.wait_for(task_id, lambda task: task.get("statusMessage") is not None, timeout=30)
        operator = mcpdo.connect(stack.url, "modern", "canceller")
        assert mcpdo.on(operator, "tasks/cancel", task_id) == {"cancelled": True, "taskId": task_id}
        await calls.wait_for(task_id, timeout=30)
    assert mcpdo.on(operator, "tasks/get", task_id)["task"]["status"] == "cancelled"
    assert (gate / "cancelled").exists()


def test_legacy_cancel_of_a_call_in_flight_from_a_second_mcpdo_connection(
    stack_factory: Any, stack: Stack, mcpdo: Mcpdo, gate: Path, tmp_path: Path
) -> None:
    # One principal on both connections: without authentication a connection lists only its own session's tasks.
    tokens = tmp_path / "tokens"
    tokens.write_text("operator-token-5d0c1b ops@example.com\n")
    private = stack_factory()
    private.task_queue = stack.task_queue  # the shared worker runs the tools
    url = private.add_front(extra=["--tokens", str(tokens)])
    caller = mcpdo.connect(url, "legacy", "caller", token="operator-token-5d0c1b")
    operator = mcpdo.connect(url, "legacy", "operator", token="operator-token-5d0c1b")

    def working() -> set[str]:
        listed = mcpdo.on(operator, "tasks/list")["tasks"]
        return {task["taskId"] for task in listed if task["status"] == "working"}

    before = working()
    call = subprocess.Popen(
        mcpdo.command("--connection", caller, "tools/call", "gated", f"gate:={gate}", "--task"),
        cwd=JS_DIR,
        env={**mcpdo.node.env, **mcpdo.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: (gate / "started").exists() or call.poll() is not None, timeout=60, what="the call")
        assert call.poll() is None, call.communicate()
        (task_id,) = working() - before
        assert mcpdo.on(operator, "tasks/cancel", task_id) == {"cancelled": True, "taskId": task_id}
        stdout, stderr = call.communicate(timeout=60)
    finally:
        if call.poll() is None:
            call.kill()
            call.communicate()
    assert call.returncode == 1, stdout
    (envelope,) = [json.loads(line) for line in stderr.splitlines() if line.startswith('{"error"')]
    # Its error envelope keeps the message, not a JSON-RPC code.
    assert envelope["error"]["message"] == 'Tool call "gated" was cancelled.'
    assert mcpdo.on(operator, "tasks/get", task_id)["task"]["status"] == "cancelled"
    assert (gate / "cancelled").exists()
