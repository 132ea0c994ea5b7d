"""The 2025-11-25 face's decisions, each on its own with stand-ins for Temporal and the client's stream.

What the client declared at its handshake, which questions go out on a
`tasks/result` stream, and what a POSTed reply to one of them does: each
breaks here within a second, where the end-to-end tests in
test_legacy_tasks.py would wait out their bound.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from starlette.types import Message

from mcp_tasks_temporal.front.legacy import legacy_tasks
from mcp_tasks_temporal.front.legacy.handshake_echo import SESSION_HEADER, encode, handshake_era
from mcp_tasks_temporal.front.legacy.handshake_requests import HandshakeEraRequests
from mcp_tasks_temporal.front.legacy.legacy_tasks import LEGACY_TASKS_VERSION, answer_id, follow_task, legacy_envelope
from mcp_tasks_temporal.temporal.contract import CLIENT_CAPABILITIES_META_KEY

pytestmark = pytest.mark.anyio

TASK_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
ELICIT = {"method": "elicitation/create", "params": {"message": "Go?", "requestedSchema": {"type": "object"}}}
SIZE = {"method": "elicitation/create", "params": {"message": "Size?", "requestedSchema": {"type": "object"}}}


def _ctx(*, session_id: str | None, params: dict[str, Any] | None = None) -> Any:
    headers = {SESSION_HEADER: session_id} if session_id is not None else {}
    return SimpleNamespace(params=params or {}, request=SimpleNamespace(headers=headers), session=None)


# -- what a handshake-revision client declared -------------------------------------------------


def test_a_client_that_declared_only_elicitation_is_asked_nothing_else() -> None:
    session = encode(
        {
            "protocolVersion": LEGACY_TASKS_VERSION,
            "capabilities": {"elicitation": {"form": {}}, "tasks": {"requests": {}}},
            "clientInfo": {"name": "host", "version": "2"},
        }
    )
    meta = legacy_envelope(_ctx(session_id=session))
    capabilities = meta[CLIENT_CAPABILITIES_META_KEY]
    assert set(capabilities) == {"elicitation", "extensions"}, capabilities
    assert capabilities["elicitation"] == {"form": {}}


def test_a_client_that_declared_nothing_is_asked_nothing() -> None:
    session = encode({"protocolVersion": LEGACY_TASKS_VERSION, "capabilities": {}, "clientInfo": {}})
    capabilities = legacy_envelope(_ctx(session_id=session))[CLIENT_CAPABILITIES_META_KEY]
    assert set(capabilities) == {"extensions"}, capabilities


# -- questions on a tasks/result stream ---------------------------------------------------------


class _Hub:
    """Delivers a fixed sequence of task states to the one subscriber, as the watch hub would."""

    def __init__(self, states: list[dict[str, Any]]) -> None:
        self.states = states

    def subscribe(self, task_id: str, principal: str | None, deliver: Callable[[dict[str, Any]], None]) -> Any:
        for state in self.states:
            deliver(state)
        return lambda: None


def _state(status: str, questions: dict[str, Any] | None = None, message: str | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {
        "taskId": TASK_ID,
        "status": status,
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z",
    }
    if questions is not None:
        task["inputRequests"] = questions
    if message is not None:
        task["statusMessage"] = message
    return task


async def test_each_question_goes_out_once_when_a_tool_asks_two_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str]] = []
    notified: list[str] = []

    async def notify(method: str, params: dict[str, Any]) -> None:
        notified.append(params["status"])

    async def send_request_on_stream(outbound: Any, request_id: str, method: str, params: Any) -> None:
        sent.append((request_id, method))

    def request_outbound(session: Any) -> Any:
        return SimpleNamespace(notify=notify)

    monkeypatch.setattr(legacy_tasks, "request_outbound", request_outbound)
    monkeypatch.setattr(legacy_tasks, "send_request_on_stream", send_request_on_stream)
    states = [
        _state("input_required", {"go": ELICIT}),
        # The same question, still outstanding, on a change of status line: not asked again.
        _state("input_required", {"go": ELICIT}, message="waiting for go"),
        _state("working", message="go answered"),
        _state("input_required", {"size": SIZE}, message="asking size"),
        # An update that lists both (the memo of a run that asks the second before the first is cleared).
        _state("input_required", {"go": ELICIT, "size": SIZE}, message="still asking"),
        _state("completed", message=None),
    ]
    with anyio.fail_after(5):
        final = await follow_task(_ctx(session_id=None), _Hub(states), TASK_ID, None, related=True)  # pyright: ignore[reportArgumentType]
    assert final["status"] == "completed"
    assert sent == [
        (answer_id(TASK_ID, "go"), "elicitation/create"),
        (answer_id(TASK_ID, "size"), "elicitation/create"),
    ], sent
    assert notified[0] == "input_required" and notified[-1] == "completed"


# -- a POSTed reply to one of those questions ---------------------------------------------------


class _Gateway:
    def __init__(self) -> None:
        self.updates: list[tuple[str, str | None, dict[str, Any]]] = []
        self.cancels: list[tuple[str, str | None]] = []

    async def update(self, task_id: str, principal: str | None, answers: dict[str, Any]) -> None:
        self.updates.append((task_id, principal, answers))

    async def cancel(self, task_id: str, principal: str | None) -> None:
        self.cancels.append((task_id, principal))


async def _post(body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> tuple[int, _Gateway, bool]:
    """POST `body` through `HandshakeEraRequests`; (status, the gateway it used, whether the SDK's app got it)."""
    gateway = _Gateway()
    reached_app = False

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal reached_app
        reached_app = True
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    middleware = HandshakeEraRequests(app, gateway=gateway, sessions=None, max_body_bytes=1 << 20)  # pyright: ignore[reportArgumentType]
    raw = json.dumps(body).encode()
    messages: list[Message] = [{"type": "http.request", "body": raw, "more_body": False}]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    with anyio.fail_after(5):
        await middleware(scope, receive, send)
    [start] = [message for message in sent if message["type"] == "http.response.start"]
    return int(start["status"]), gateway, reached_app


REVISION_HEADER = [(b"content-type", b"application/json"), (b"mcp-protocol-version", LEGACY_TASKS_VERSION.encode())]


async def test_a_reply_from_a_2025_11_25_client_is_the_tasks_answer() -> None:
    reply = {"jsonrpc": "2.0", "id": answer_id(TASK_ID, "go"), "result": {"action": "accept"}}
    for headers in (REVISION_HEADER, [(b"content-type", b"application/json")]):
        status, gateway, reached_app = await _post(reply, headers)
        assert (status, reached_app) == (202, False), headers
        assert gateway.updates == [(TASK_ID, None, {"go": {"action": "accept"}})], headers
        assert gateway.cancels == []


async def test_a_refused_question_cancels_its_task() -> None:
    refusal = {"jsonrpc": "2.0", "id": answer_id(TASK_ID, "go"), "error": {"code": -32601, "message": "no"}}
    status, gateway, reached_app = await _post(refusal, REVISION_HEADER)
    assert (status, reached_app) == (202, False)
    assert gateway.cancels == [(TASK_ID, None)]
    assert gateway.updates == []


async def test_a_modern_request_or_an_unrelated_reply_passes_through() -> None:
    reply = {"jsonrpc": "2.0", "id": answer_id(TASK_ID, "go"), "result": {"action": "accept"}}
    modern = [(b"mcp-protocol-version", b"2026-07-28")]
    status, gateway, reached_app = await _post(reply, modern)
    assert reached_app and gateway.updates == [] and status == 202
    other: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "result": {}}
    _, gateway, reached_app = await _post(other, REVISION_HEADER)
    assert reached_app and gateway.updates == []


def test_the_handshake_revisions_are_told_from_the_current_one() -> None:
    for version in (b"2025-11-25", b"2025-06-18", b"2025-03-26"):
        assert handshake_era({"headers": [(b"mcp-protocol-version", version)]}), version
    assert handshake_era({"headers": []})  # an initialize carries no version yet
    assert not handshake_era({"headers": [(b"mcp-protocol-version", b"2026-07-28")]})
