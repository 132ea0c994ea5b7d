"""2025-11-25 tasks (SEP-1686) on the wire: the handshake revision's clients get the same workflows.

Through the in-process front and its workers; a question asked on `tasks/result` and answered is also
followed end to end, over a real socket to the session's front and worker processes.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.bearer import bearer, token_auth
from tests.conftest import OpenFront, Stack
from tests.front_app import InProcessFront
from tests.legacy_wire import RELATED_TASK, LegacyMcp
from tests.wire import TERMINAL, HttpMcp

pytestmark = pytest.mark.anyio

WAIT = 30


@pytest.fixture
def legacy(front: InProcessFront, front_http: httpx.AsyncClient) -> LegacyMcp:
    return LegacyMcp(front.url, front_http)


async def _task(legacy: LegacyMcp, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    created = (
        await legacy.request("tools/call", {"name": name, "arguments": arguments, "task": {"ttl": 60000}})
    ).result
    task: dict[str, Any] = created["task"]
    return task


async def _until(legacy: LegacyMcp, task_id: str, statuses: set[str]) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        while True:
            task = (await legacy.request("tasks/get", {"taskId": task_id})).result
            if task["status"] in statuses:
                return task
            assert task["status"] not in TERMINAL, f"ended {task['status']}, not {statuses}: {task}"
            await anyio.sleep(0.1)


async def test_initialize_advertises_tasks_and_tools_their_task_support(legacy: LegacyMcp) -> None:
    init = (await legacy.initialize({"tasks": {"requests": {}}})).result
    assert init["protocolVersion"] == "2025-11-25"
    assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    tools = {tool["name"]: tool for tool in (await legacy.request("tools/list")).result["tools"]}
    assert tools["double"]["execution"]["taskSupport"] == "optional"
    assert tools["needs_task"]["execution"]["taskSupport"] == "required"
    assert tools["never_task"]["execution"]["taskSupport"] == "forbidden"
    assert "taskSupport" not in (tools["echo"].get("execution") or {})


async def test_older_handshake_revisions_get_no_tasks_capability(legacy: LegacyMcp) -> None:
    init = (
        await legacy.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}},
        )
    ).result
    assert init["protocolVersion"] == "2025-06-18"
    assert "tasks" not in init["capabilities"]


async def test_a_task_is_created_read_and_its_result_is_the_call_tool_result(legacy: LegacyMcp) -> None:
    task = await _task(legacy, "double", {"x": 21})
    assert task["status"] == "working"
    assert task["ttl"] == 24 * 3600 * 1000  # the tool's lifetime, whatever was asked for
    assert {"taskId", "createdAt", "lastUpdatedAt", "pollInterval"} <= set(task)
    result = (await legacy.request("tasks/result", {"taskId": task["taskId"]})).result
    assert result["structuredContent"] == {"value": 42}
    assert result["isError"] is False
    assert result["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
    done = (await legacy.request("tasks/get", {"taskId": task["taskId"]})).result
    assert done["status"] == "completed"
    assert "result" not in done


async def test_a_task_of_a_forbidden_tool_is_refused(legacy: LegacyMcp) -> None:
    reply = await legacy.request("tools/call", {"name": "never_task", "arguments": {"x": 1}, "task": {}})
    assert reply.error["code"] == -32601
    reply = await legacy.request("tools/call", {"name": "echo", "arguments": {"text": "a"}, "task": {}})
    assert reply.error["code"] == -32601


async def test_tasks_result_waits_and_streams_status(legacy: LegacyMcp, gate: Path) -> None:
    task = await _task(legacy, "gated", {"gate": str(gate)})
    statuses: list[str] = []
    async with legacy.stream("tasks/result", {"taskId": task["taskId"]}) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "notifications/tasks/status":
                    statuses.append(frame["params"]["status"])
                    assert frame["params"]["taskId"] == task["taskId"]
                    if frame["params"]["status"] == "working" and not (gate / "release").exists():
                        (gate / "release").write_text("1")
                elif "result" in frame:
                    assert frame["result"]["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
                    break
    assert statuses[0] == "working"
    assert statuses[-1] == "completed"


async def test_failing_tools(legacy: LegacyMcp) -> None:
    task = await _task(legacy, "protocol_error", {"code": -32042, "message": "backend refused"})
    reply = await legacy.request("tasks/result", {"taskId": task["taskId"]})
    assert reply.error["code"] == -32042
    failed = (await legacy.request("tasks/get", {"taskId": task["taskId"]})).result
    assert failed["status"] == "failed"
    assert "backend refused" in failed["statusMessage"]
    task = await _task(legacy, "tool_error", {"reason": "nope"})
    result = (await legacy.request("tasks/result", {"taskId": task["taskId"]})).result
    assert result["isError"] is True


async def test_cancel(legacy: LegacyMcp, gate: Path) -> None:
    task = await _task(legacy, "gated", {"gate": str(gate)})
    cancelled = (await legacy.request("tasks/cancel", {"taskId": task["taskId"]})).result
    assert cancelled["taskId"] == task["taskId"]
    assert (await _until(legacy, task["taskId"], {"cancelled"}))["status"] == "cancelled"
    again = await legacy.request("tasks/cancel", {"taskId": task["taskId"]})
    assert again.error["code"] == -32602


async def test_list_pages_through_the_callers_tasks(legacy: LegacyMcp) -> None:
    legacy = await legacy.handshake()
    made = {(await _task(legacy, "double", {"x": n}))["taskId"] for n in range(3)}
    with anyio.fail_after(WAIT):
        while True:
            seen: set[str] = set()
            cursor: str | None = None
            while True:
                page = (await legacy.request("tasks/list", {"cursor": cursor} if cursor else {})).result
                seen |= {task["taskId"] for task in page["tasks"]}
                assert all({"taskId", "status", "createdAt"} <= set(task) for task in page["tasks"])
                cursor = page.get("nextCursor")
                if cursor is None:
                    break
            if made <= seen:
                break
            await anyio.sleep(0.2)  # visibility is eventually consistent
    for forged in ("%%%", base64.urlsafe_b64encode(os.urandom(40)).decode(), "AAAA." + "A" * 32):
        assert (await legacy.request("tasks/list", {"cursor": forged})).error["code"] == -32602


async def test_unknown_tasks(legacy: LegacyMcp) -> None:
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        reply = await legacy.request(method, {"taskId": "00000000-0000-4000-8000-000000000000"})
        assert reply.error["code"] == -32602


async def test_modern_requests_still_lack_list_and_result(front: InProcessFront, front_http: httpx.AsyncClient) -> None:
    modern = HttpMcp(front.url, front_http)
    assert (await modern.request("tasks/list", {})).error["code"] == -32601
    reply = await modern.request("tasks/result", {"taskId": "00000000-0000-4000-8000-000000000000"})
    assert reply.error["code"] == -32601


async def test_a_question_is_asked_on_tasks_result_and_answered_end_to_end(
    stack: Stack, http: httpx.AsyncClient
) -> None:
    """The session's front and worker processes: the handshake revision over a real socket and uvicorn."""
    legacy = LegacyMcp(stack.url, http)
    task = await _task(legacy, "ask_one_midway", {})
    await _until(legacy, task["taskId"], {"input_required"})
    async with legacy.stream("tasks/result", {"taskId": task["taskId"]}) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "elicitation/create":
                    assert frame["params"]["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
                    assert frame["params"]["message"] == "Go?"
                    status = await legacy.answer(frame["id"], {"action": "accept", "content": {"approve": True}})
                    assert status == 202
                elif "result" in frame:
                    assert frame["result"]["content"][0]["text"] == "accept"
                    break


# -- questions on a plain tools/call, for hosts without tasks ---------------------------------


async def test_a_plain_call_asks_on_its_own_stream_and_any_front_takes_the_answer(
    legacy: LegacyMcp, open_front: OpenFront
) -> None:
    host = await legacy.handshake({"elicitation": {}})
    other = await open_front()
    asked: list[dict[str, Any]] = []
    result: dict[str, Any] = {}
    async with other.http() as other_http:
        through_other = LegacyMcp(other.url, other_http, headers=host.extra_headers)
        call = {"name": "numbered_steps", "arguments": {"steps": 1, "pause": 0}}
        async with host.stream("tools/call", call) as frames:
            with anyio.fail_after(WAIT):
                async for frame in frames:
                    if frame.get("method") == "elicitation/create":
                        asked.append(frame)
                        assert RELATED_TASK not in (frame["params"].get("_meta") or {})
                        yes = {"action": "accept", "content": {"approve": True}}
                        assert await through_other.answer(frame["id"], yes) == 202
                    elif "result" in frame or "error" in frame:
                        result = frame["result"]
                        break
    assert [frame["params"]["message"] for frame in asked] == ["Go on?"]
    assert result["content"][0]["text"] == "accept after 1 steps"
    assert RELATED_TASK not in (result.get("_meta") or {})


async def test_a_resolved_argument_is_asked_on_the_plain_calls_stream(legacy: LegacyMcp) -> None:
    host = await legacy.handshake({"elicitation": {}})
    async with host.stream("tools/call", {"name": "greet_someone", "arguments": {}}) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "elicitation/create":
                    assert frame["params"]["message"] == "What is your name?"
                    assert await host.answer(frame["id"], {"action": "accept", "content": {"name": "Ada"}}) == 202
                elif "result" in frame or "error" in frame:
                    assert frame["result"]["content"][0]["text"] == "Hello, Ada!"
                    break


async def test_a_refused_question_ends_the_call_with_an_error(legacy: LegacyMcp) -> None:
    host = await legacy.handshake({"elicitation": {}})
    async with host.stream("tools/call", {"name": "numbered_steps", "arguments": {"steps": 1, "pause": 0}}) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "elicitation/create":
                    assert await host.refuse(frame["id"], -32601, "Method not found") == 202
                elif "result" in frame or "error" in frame:
                    assert frame["error"]["code"] == -32603
                    break


async def test_a_host_without_elicitation_is_served_as_before(legacy: LegacyMcp) -> None:
    host = await legacy.handshake()
    assert (await host.request("tools/call", {"name": "double", "arguments": {"x": 3}})).result[
        "structuredContent"
    ] == {"value": 6}
    reply = await host.request("tools/call", {"name": "numbered_steps", "arguments": {"steps": 1, "pause": 0}})
    assert reply.error["code"] == -32021
    # What it lacks is elicitation: a 2025-11-25 client can never declare the tasks extension.
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {}}}


# -- principals ---------------------------------------------------------------------------------

ALICE, BOB = "alice-legacy-5c1e", "bob-legacy-93ad"


@pytest.fixture
async def secured(open_front: OpenFront) -> InProcessFront:
    """A front with bearer tokens on the module's task queue (its workers run the tasks)."""
    return await open_front(auth=token_auth({ALICE: "alice@example.com", BOB: "bob@example.com"}))


async def test_a_task_and_its_questions_belong_to_their_principal(secured: InProcessFront) -> None:
    async with secured.http() as http:
        await _belong_to_their_principal(LegacyMcp(secured.url, http, headers=bearer(ALICE)), secured, http)


async def _belong_to_their_principal(alice: LegacyMcp, secured: InProcessFront, http: httpx.AsyncClient) -> None:
    bob = LegacyMcp(secured.url, http, headers=bearer(BOB))
    task = await _task(alice, "ask_one_midway", {})
    await _until(alice, task["taskId"], {"input_required"})
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        assert (await bob.request(method, {"taskId": task["taskId"]})).error["code"] == -32602
    with anyio.fail_after(WAIT):
        while task["taskId"] not in {t["taskId"] for t in (await alice.request("tasks/list")).result["tasks"]}:
            await anyio.sleep(0.2)
    assert task["taskId"] not in {t["taskId"] for t in (await bob.request("tasks/list")).result["tasks"]}
    # Bob cannot answer Alice's question, even knowing its ID: the reply is not taken.
    answer_id = f"mcp-tasks-temporal/answer/{task['taskId']}/b25seQ"  # the key "only"
    assert await bob.answer(answer_id, {"action": "accept", "content": {"approve": True}}) == 400
    assert (await alice.request("tasks/get", {"taskId": task["taskId"]})).result["status"] == "input_required"
    assert await alice.answer(answer_id, {"action": "decline"}) == 202
    result = (await alice.request("tasks/result", {"taskId": task["taskId"]})).result
    assert result["content"][0]["text"] == "decline"


# -- anonymous callers: each lists only what its own session created -----------------------------


async def _listed(legacy: LegacyMcp) -> set[str]:
    reply = await legacy.request("tasks/list")
    return {task["taskId"] for task in reply.result["tasks"]}


async def test_an_anonymous_caller_lists_only_its_own_sessions_tasks(open_front: OpenFront) -> None:
    """Two anonymous fronts sharing a request-state key: a session's ID opens at either."""
    key = ("k" * 40,)
    first_front, second_front = await open_front(request_state_keys=key), await open_front(request_state_keys=key)
    async with first_front.http() as first_http, second_front.http() as second_http:
        first = await LegacyMcp(first_front.url, first_http).handshake()
        mine = {(await _task(first, "double", {"x": n}))["taskId"] for n in range(2)}
        with anyio.fail_after(WAIT):
            while not mine <= await _listed(first):
                await anyio.sleep(0.2)  # visibility is eventually consistent
        # The same session through another front sharing the key: the same tasks.
        through_second = LegacyMcp(second_front.url, second_http, headers=first.extra_headers)
        assert mine <= await _listed(through_second)

        second = await LegacyMcp(first_front.url, first_http).handshake()
        sessionless = LegacyMcp(first_front.url, first_http)
        session = first.extra_headers["mcp-session-id"]
        untagged = LegacyMcp(first_front.url, first_http, headers={"mcp-session-id": session.rpartition(".")[0]})
        retagged = LegacyMcp(first_front.url, first_http, headers={"mcp-session-id": session[:-4] + "AAAA"})
        for stranger in (second, sessionless, untagged, retagged):
            assert not mine & await _listed(stranger)
            assert (await stranger.request("tasks/list", {"cursor": "AAAA." + "A" * 32})).error["code"] == -32602
        assert (await _task(second, "double", {"x": 9}))["taskId"] not in await _listed(first)
