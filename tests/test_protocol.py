"""The protocol surface over Streamable HTTP: negotiation, gates, routing headers, removed methods.

The front's ASGI app and the worker run in the test process (the `front` fixtures); the requests are
the bytes a client sends, and the answers' status codes and headers are the app's own. Errors are
recognised by JSON-RPC code and HTTP status only, never by message text.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import OpenFront
from tests.wire import HttpMcp, Reply, TaskCalls, base_headers, envelope

pytestmark = pytest.mark.anyio

EXTENSION_ID = "io.modelcontextprotocol/tasks"
MISSING_CAPABILITY = -32021
HEADER_MISMATCH = -32020
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
BOGUS_ID = "00000000-0000-4000-8000-000000000000"
ACK_FORBIDDEN = {"taskId", "status", "result", "error", "inputRequests"}


def _params(method: str, task_id: str) -> dict[str, Any]:
    return {"taskId": task_id, **({"inputResponses": {}} if method == "tasks/update" else {})}


def _assert_error(reply: Reply, code: int, status: int) -> dict[str, Any]:
    error = reply.error
    assert error["code"] == code, reply.body
    assert reply.status == status, (reply.status, reply.body)
    return error


def _sentinel(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


# -- negotiation ---------------------------------------------------------------------


async def test_discover_advertises_the_extension_with_empty_settings_and_no_legacy_tasks_capability(
    front_mcp: TaskCalls,
) -> None:
    reply = await front_mcp.client.request("server/discover", {})
    assert reply.status == 200
    result = reply.result
    assert result["resultType"] == "complete"
    capabilities = result["capabilities"]
    assert capabilities["extensions"][EXTENSION_ID] == {}
    assert "tasks" not in capabilities


async def test_discover_advertises_the_extension_even_to_a_request_that_does_not_declare_it(
    front_mcp: TaskCalls,
) -> None:
    reply = await front_mcp.client.request("server/discover", {}, tasks=False)
    assert reply.status == 200
    assert reply.result["capabilities"]["extensions"][EXTENSION_ID] == {}


# -- the per-request capability gate ----------------------------------------------------


async def test_optional_task_tool_without_the_extension_answers_synchronously(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("double", {"x": 5}, tasks=False)
    assert reply.status == 200
    result = reply.result
    assert result["resultType"] == "complete"
    assert result["content"]
    assert result["structuredContent"] == {"value": 10}
    assert "taskId" not in result


async def test_an_earlier_declaring_request_does_not_make_a_later_undeclared_call_a_task(front_mcp: TaskCalls) -> None:
    await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.call_tool("double", {"x": 2}, tasks=False)
    assert reply.result["resultType"] == "complete"
    assert "taskId" not in reply.result
    assert reply.result["structuredContent"] == {"value": 4}


async def test_required_task_tool_without_the_extension_is_missing_capability_with_http_400(
    front_mcp: TaskCalls,
) -> None:
    error = _assert_error(await front_mcp.call_tool("needs_task", {"x": 2}, tasks=False), MISSING_CAPABILITY, 400)
    assert error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}


async def test_required_task_tool_with_the_extension_runs_as_a_task(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("needs_task", {"x": 7})
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "21"
    assert task["result"]["structuredContent"] == {"result": 21}


async def test_never_task_tool_with_the_extension_answers_synchronously(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("never_task", {"x": 1})
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    assert "taskId" not in reply.result
    assert reply.result["content"][0]["text"] == "2"


async def test_tool_without_task_policy_with_the_extension_answers_synchronously(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("echo", {"text": "hi"})
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    assert "taskId" not in reply.result
    assert reply.result["content"][0]["text"] == "hi"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_task_methods_without_the_extension_are_missing_capability_for_a_bogus_id(
    front_mcp: TaskCalls, method: str
) -> None:
    reply = await front_mcp.client.request(method, _params(method, BOGUS_ID), tasks=False)
    error = _assert_error(reply, MISSING_CAPABILITY, 400)
    assert error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_task_methods_without_the_extension_are_missing_capability_for_a_real_task(
    front_mcp: TaskCalls, method: str
) -> None:
    created = await front_mcp.start("double", {"x": 3})
    reply = await front_mcp.client.request(method, _params(method, created["taskId"]), tasks=False)
    _assert_error(reply, MISSING_CAPABILITY, 400)
    # The refused cancel changed nothing: the task still completes normally.
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "completed"


# -- routing headers --------------------------------------------------------------------


async def test_tasks_get_with_matching_mcp_name_works(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.get(created["taskId"], headers={"mcp-name": created["taskId"]})
    assert reply.status == 200
    assert reply.result["taskId"] == created["taskId"]


async def test_tasks_get_with_mismatched_mcp_name_is_header_mismatch_with_http_400(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.get(created["taskId"], headers={"mcp-name": BOGUS_ID})
    _assert_error(reply, HEADER_MISMATCH, 400)


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_tasks_methods_without_mcp_name_are_served_by_default(front_mcp: TaskCalls, method: str) -> None:
    # FastMCP's and pydantic-ai's task clients send no Mcp-Name: a missing header routes nowhere wrong.
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.client.request(method, _params(method, created["taskId"]), headers={"mcp-name": None})
    assert reply.status == 200, reply.body
    assert "error" not in reply.body


async def test_tasks_get_with_an_empty_mcp_name_is_header_mismatch(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.get(created["taskId"], headers={"mcp-name": ""})
    _assert_error(reply, HEADER_MISMATCH, 400)


async def test_a_front_that_requires_mcp_name_refuses_tasks_methods_without_it(open_front: OpenFront) -> None:
    strict_front = await open_front(require_mcp_name=True)
    async with strict_front.http() as http:
        await _refuses_tasks_methods_without_mcp_name(strict_front.calls(http))


async def _refuses_tasks_methods_without_mcp_name(strict: TaskCalls) -> None:
    created = await strict.start("double", {"x": 1})
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        reply = await strict.client.request(method, _params(method, created["taskId"]), headers={"mcp-name": None})
        _assert_error(reply, HEADER_MISMATCH, 400)
    reply = await strict.get(created["taskId"], headers={"mcp-name": created["taskId"]})
    assert reply.status == 200
    assert reply.result["taskId"] == created["taskId"]


@pytest.mark.parametrize("method", ["tasks/update", "tasks/cancel"])
async def test_update_and_cancel_with_mismatched_mcp_name_are_header_mismatch_with_http_400(
    front_mcp: TaskCalls, method: str
) -> None:
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.client.request(method, _params(method, created["taskId"]), headers={"mcp-name": BOGUS_ID})
    _assert_error(reply, HEADER_MISMATCH, 400)


async def test_mcp_method_header_that_disagrees_with_the_body_is_header_mismatch_with_http_400(
    front_mcp: TaskCalls,
) -> None:
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.get(created["taskId"], headers={"mcp-method": "tasks/cancel"})
    _assert_error(reply, HEADER_MISMATCH, 400)
    assert (await front_mcp.wait_for(created["taskId"]))["status"] == "completed", (
        "the mismatched request must not have cancelled"
    )


async def test_mcp_name_in_base64_sentinel_form_is_decoded_and_accepted(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.get(created["taskId"], headers={"mcp-name": _sentinel(created["taskId"])})
    assert reply.status == 200
    assert reply.result["taskId"] == created["taskId"]


async def test_mcp_name_in_base64_sentinel_form_of_another_id_is_header_mismatch(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 1})
    reply = await front_mcp.get(created["taskId"], headers={"mcp-name": _sentinel(BOGUS_ID)})
    _assert_error(reply, HEADER_MISMATCH, 400)


async def test_tools_call_with_an_explicit_matching_mcp_method_header_works(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("echo", {"text": "routed"}, headers={"mcp-method": "tools/call"})
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    assert reply.result["content"][0]["text"] == "routed"


# -- removed methods ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_removed_task_methods_are_method_not_found_with_http_404(front_mcp: TaskCalls, method: str) -> None:
    params = {"taskId": BOGUS_ID} if method == "tasks/result" else {}
    headers = {"mcp-name": BOGUS_ID} if method == "tasks/result" else None
    reply = await front_mcp.client.request(method, params, headers=headers)
    _assert_error(reply, METHOD_NOT_FOUND, 404)


# -- the legacy `task` param -----------------------------------------------------------------

LEGACY_TASK = {"ttl": 60000, "pollInterval": 1000}


async def test_legacy_task_param_on_a_plain_tool_is_ignored(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.client.request(
        "tools/call", {"name": "echo", "arguments": {"text": "old"}, "task": LEGACY_TASK}
    )
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    assert reply.result["content"][0]["text"] == "old"
    assert "taskId" not in reply.result


async def test_legacy_task_param_without_the_extension_does_not_make_a_task(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.client.request(
        "tools/call", {"name": "double", "arguments": {"x": 6}, "task": LEGACY_TASK}, tasks=False
    )
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    assert reply.result["structuredContent"] == {"value": 12}


async def test_legacy_task_param_on_a_task_tool_with_the_extension_is_just_a_normal_task(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.client.request("tools/call", {"name": "double", "arguments": {"x": 9}, "task": LEGACY_TASK})
    assert reply.status == 200
    created = reply.result
    assert created["resultType"] == "task"
    assert not {"ttl", "pollInterval", "task"} & created.keys()
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "completed"
    assert task["result"]["structuredContent"] == {"value": 18}


# -- resultType and the acks ---------------------------------------------------------------------


async def test_result_type_is_complete_on_every_non_task_result(front_mcp: TaskCalls) -> None:
    synchronous = await front_mcp.call_tool("double", {"x": 1}, tasks=False)
    assert synchronous.result["resultType"] == "complete"
    created = await front_mcp.start("double", {"x": 1})
    got = await front_mcp.get(created["taskId"])
    assert got.result["resultType"] == "complete"
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed" and done["resultType"] == "complete"
    assert done["result"]["resultType"] == "complete"
    updated = await front_mcp.update(created["taskId"], {})
    assert updated.result["resultType"] == "complete"
    cancelled = await front_mcp.cancel(created["taskId"])
    assert cancelled.result["resultType"] == "complete"


async def test_update_and_cancel_acks_carry_no_task_fields(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 2})
    for reply in (
        await front_mcp.update(created["taskId"], {"stray": {"action": "accept"}}),
        await front_mcp.cancel(created["taskId"]),
    ):
        assert reply.status == 200
        assert not ACK_FORBIDDEN & reply.result.keys(), reply.result
        assert reply.result["resultType"] == "complete"


# -- malformed params ------------------------------------------------------------------------------


async def test_tasks_get_without_task_id_is_invalid_params_not_a_server_error(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.client.request("tasks/get", {}, headers={"mcp-name": None})
    assert reply.error["code"] == INVALID_PARAMS, reply.body
    assert reply.status is not None and reply.status < 500


@pytest.mark.parametrize("task_id", [42, None, ["x"], {"id": "x"}])
async def test_tasks_get_with_a_non_string_task_id_is_invalid_params_not_a_server_error(
    front_mcp: TaskCalls, task_id: object
) -> None:
    reply = await front_mcp.client.request("tasks/get", {"taskId": task_id}, headers={"mcp-name": None})
    assert reply.error["code"] == INVALID_PARAMS, reply.body
    assert reply.status is not None and reply.status < 500


async def test_raw_tasks_get_with_a_numeric_task_id_is_invalid_params_not_a_server_error(front_mcp: TaskCalls) -> None:
    assert isinstance(front_mcp.client, HttpMcp)
    message = {"jsonrpc": "2.0", "id": "raw-1", "method": "tasks/get", "params": {"taskId": 7, "_meta": envelope()}}
    reply = await front_mcp.client.post(message, {**base_headers("tasks/get"), "mcp-name": "7"})
    assert reply.error["code"] == INVALID_PARAMS, reply.body
    assert reply.status is not None and reply.status < 500


# -- more than one front -------------------------------------------------------------------------------


async def test_a_task_created_on_one_front_is_read_and_cancelled_through_another(
    front_mcp: TaskCalls, open_front: OpenFront, gate: Any
) -> None:
    other = await open_front()
    async with other.http() as http:
        await _read_and_cancelled_through(other.calls(http), front_mcp, gate)


async def _read_and_cancelled_through(front_b: TaskCalls, front_mcp: TaskCalls, gate: Any) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    got = await front_b.get(created["taskId"])
    assert got.status == 200
    assert got.result["taskId"] == created["taskId"]
    assert got.result["status"] == "working"
    ack = await front_b.cancel(created["taskId"])
    assert ack.status == 200 and ack.result["resultType"] == "complete"
    task = await front_b.wait_for(created["taskId"], timeout=20)
    assert task["status"] == "cancelled"
    assert (await front_mcp.get(created["taskId"])).result["status"] == "cancelled"
