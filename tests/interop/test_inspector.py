"""`@modelcontextprotocol/inspector` 2.12's CLI (`--cli --protocol-era modern`) against live front servers.

The one-shot CLI declares the tasks extension and drives a task tool's task to
its result, but it advertises no `elicitation` (it cannot ask anyone) and has no
`tasks/*` methods: a tool that says it asks is refused before it runs (-32021,
its exit status 1), and a task cannot be cancelled from it. Its exit statuses:
0 a result, 1 an error, 5 a tool result with `isError: true`.

The Inspector's connection CLI, `mcpdo` (experimental, in the same package), keeps
a connection in a daemon, advertises `elicitation`, and parks a call whose task
asks: `elicitation/respond` answers it and returns the tool's result.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import Stack
from tests.interop.node import NodeClients

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


def test_a_question_is_answered_through_mcpdo_elicitation_respond(
    stack: Stack, node: NodeClients, gate: Path, tmp_path: Path
) -> None:
    # Its own HOME: the daemon and its catalog are this test's alone.
    env = {"HOME": str(tmp_path), "MCP_ALLOW_DEFAULT_CONNECTION": "1", "MCP_INSPECTOR_SECRET_STORE": "memory"}

    def mcpdo(*args: str) -> dict[str, Any]:
        done = node.run(MCPDO, "--format", "json", *args, env=env)
        start = done.stdout.find("{")
        assert done.returncode == 0 and start >= 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-4000:]}"
        reply: dict[str, Any] = json.loads(done.stdout[start:])
        return reply

    try:
        assert mcpdo("connect", stack.url, "--era", "modern", "--elicit", "form")["protocolEra"] == "modern"
        pending = mcpdo("tools/call", "approve_step", f"gate:={gate}")["elicitationPending"]
        assert pending["message"] == "Go on?"
        result = mcpdo("elicitation/respond", pending["elicitationId"], "approve:=true")
        assert result["content"][0]["text"] == "approved"
        assert (gate / "work-runs").read_text() == "1"
    finally:
        node.run(MCPDO, "daemon", "stop", env=env)
