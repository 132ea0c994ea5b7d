"""Hostile input against a front server: never a 500, never a wedged worker, always a JSON-RPC answer.

The front and its workers run in the test process: an exception the app lets out fails the request in
the test, with its traceback, where uvicorn would answer 500.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.front_app import InProcessFront
from tests.wire import HttpMcp, TaskCalls, base_headers, envelope, request_message

pytestmark = pytest.mark.anyio

FUZZ_EXAMPLES = int(os.environ.get("MCP_TASKS_FUZZ_EXAMPLES", "600"))
"""Generated requests per run: each is a whole request through the front's ASGI app (2500, each a round trip to
a front process, made this the slowest test of the suite). Hypothesis keeps the failing ones in `.hypothesis/`
and tries them first next time; a longer campaign is
`MCP_TASKS_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/test_hostile_input.py`."""

# Codes a JSON-RPC answer from this server may carry; anything else is a bug.
KNOWN_CODES = {-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022}
METHODS = ["tools/call", "tasks/get", "tasks/update", "tasks/cancel", "tasks/list", "tasks/result", "server/discover"]
TOOLS = ["double", "echo", "tool_error", "protocol_error", "never_task", "needs_task", "no-such-tool"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    # Methods travel in a header too, which only carries visible ASCII.
    method = draw(st.sampled_from(METHODS) | st.text(alphabet="abcdefghijklmnopqrstuvwxyz/_-", max_size=15))
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        params["_meta"] = draw(
            st.sampled_from(
                [envelope(), envelope(tasks=False), {}, {"io.modelcontextprotocol/protocolVersion": "1999"}]
            )
            | json_values
        )
    if method == "tools/call":
        params["name"] = draw(st.sampled_from(TOOLS) | json_values)
        params["arguments"] = draw(st.fixed_dictionaries({"x": st.integers(-5, 5)}) | json_values)
    if method.startswith("tasks/"):
        params["taskId"] = draw(st.sampled_from([str(uuid.uuid4()), "x", ""]) | json_values)
    if method == "tasks/update":
        params["inputResponses"] = draw(json_values)
    params.update(draw(st.dictionaries(st.text(max_size=8), json_values, max_size=2)))
    message: Any = {
        "jsonrpc": draw(st.sampled_from(["2.0", "1.0"])),
        "id": draw(st.integers(0, 10**6) | st.text(max_size=5)),
        "method": method,
    }
    if draw(st.booleans()):
        message["params"] = params if draw(st.integers(0, 9)) else draw(json_values)
    body = json.dumps(message).encode()
    mangle = draw(st.integers(0, 12))
    if mangle == 0:
        body = body[: draw(st.integers(0, len(body)))]  # truncated JSON
    elif mangle == 1:
        body = draw(st.binary(max_size=64))
    elif mangle == 2:
        body = json.dumps([message, message]).encode()  # batches are not 2026-07-28
    name = params.get("name") if method == "tools/call" else params.get("taskId")
    headers = base_headers(method, name if isinstance(name, str) and name.isascii() and name.isprintable() else None)
    header_trick = draw(st.integers(0, 8))
    if header_trick == 0:
        headers["mcp-name"] = "=?base64?" + base64.b64encode(str(name).encode()).decode() + "?="
    elif header_trick == 1:
        headers["mcp-name"] = "=?base64?!!notbase64?="
    elif header_trick == 2:
        headers["mcp-method"] = draw(st.sampled_from(METHODS))
    elif header_trick == 3:
        headers.pop("mcp-protocol-version")
    elif header_trick == 4:
        headers["mcp-protocol-version"] = draw(st.sampled_from(["2025-11-25", "2099-01-01", "garbage"]))
    elif header_trick == 5:
        headers["content-type"] = "text/plain"
    return body, headers


def check_answer(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.headers.get("content-type", "").startswith("application/json") and response.content:
        answer = response.json()
        if isinstance(answer, dict) and "error" in answer:
            assert answer["error"]["code"] in KNOWN_CODES, answer
            text = json.dumps(answer)
            assert "Traceback" not in text and 'File "' not in text, "no stack traces to the client"


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=requests())
async def test_generated_requests_get_well_formed_answers(
    front: InProcessFront, front_http: httpx.AsyncClient, request: tuple[bytes, dict[str, str]]
) -> None:
    body, headers = request
    check_answer(await front_http.post(front.url, content=body, headers=headers))


async def test_duplicate_routing_headers_are_header_mismatch(
    front: InProcessFront, front_http: httpx.AsyncClient
) -> None:
    task_id = str(uuid.uuid4())
    message = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id, "_meta": envelope()}}
    headers = [(k, v) for k, v in base_headers("tasks/get", task_id).items()] + [("mcp-name", task_id)]
    response = await front_http.post(front.url, content=json.dumps(message), headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


async def test_oversized_bodies_are_refused_before_parsing(
    front: InProcessFront, front_http: httpx.AsyncClient
) -> None:
    huge = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "double", "arguments": {"x": "9" * (2 * 1024 * 1024)}, "_meta": envelope()},
    }
    response = await front_http.post(front.url, content=json.dumps(huge), headers=base_headers("tools/call", "double"))
    assert response.status_code == 413


async def test_huge_input_responses_under_the_limit_are_ignored_for_unknown_keys(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 1})
    responses = {f"k{i}": {"action": "accept", "content": {"v": "x" * 100}} for i in range(5000)}
    reply = await front_mcp.update(created["taskId"], responses)
    assert reply.status == 200 and reply.result["resultType"] == "complete"


async def test_the_server_and_worker_still_work_after_the_barrage(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 20})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed" and done["result"]["structuredContent"] == {"value": 40}


LONE = "bad \ud800 text"
"""A lone UTF-16 surrogate: valid in JSON (`"\\ud800"`), not encodable as UTF-8."""


@pytest.mark.parametrize("where", ["arguments", "_meta", "inputResponses"])
async def test_a_lone_surrogate_is_invalid_params(front_mcp: TaskCalls, where: str) -> None:
    if where == "inputResponses":
        task_id = (await front_mcp.start("double", {"x": 1}))["taskId"]
        params: dict[str, Any] = {"taskId": task_id, "inputResponses": {"k": {"action": "accept", "content": LONE}}}
        message = request_message(1, "tasks/update", params)
        headers = base_headers("tasks/update", task_id)
    else:
        meta = {**envelope(), "note": LONE} if where == "_meta" else envelope()
        arguments = {"x": 1, "label": LONE} if where == "arguments" else {"x": 1}
        message = request_message(1, "tools/call", {"name": "double", "arguments": arguments, "_meta": meta})
        headers = base_headers("tools/call", "double")
    assert isinstance(front_mcp.client, HttpMcp)
    reply = await front_mcp.client.post(message, headers)
    assert reply.status is not None and reply.status < 500
    assert reply.error["code"] == -32602, reply.error
    assert "Traceback" not in json.dumps(reply.error) and "\\ud800" not in json.dumps(reply.error)
