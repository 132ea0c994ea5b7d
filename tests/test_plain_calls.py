"""Plain calls (no tasks extension) served by a task: cancel, disconnect and progress.

A plain call's client never learns its task's ID, so the task lives as long as the
call: `notifications/cancelled` (posted to any front) or a closed stream cancels it,
and its status lines come back as `notifications/progress`. A task created as a task
is the client's to cancel, never a disconnect's. Through in-process fronts and workers;
the stdio server is a process of its own.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_tasks_temporal.temporal.ids import is_task_id, plain_call_task_id
from tests.bearer import bearer, token_auth
from tests.conftest import OpenFront
from tests.front_app import InProcessFront
from tests.legacy_wire import LegacyMcp, legacy_headers
from tests.processes import CLI, REPO_ROOT, child_env
from tests.test_push import http_listen, listen_message
from tests.wire import TERMINAL, HttpMcp, TaskCalls, base_headers, envelope, request_message, sse_frames

pytestmark = pytest.mark.anyio

APP = "tests.plain_calls_app:app"
ALICE, BOB = "alice-plain-3f1b", "bob-plain-8c2d"
WAIT = 20
"""A cancel reaches a running tool through its heartbeat (every 2 s): well within this."""
PIPELINE = ["checkout", "compile", "test", "deploy"]


@pytest.fixture(scope="module")
def app_spec() -> str:
    return APP


@pytest.fixture(scope="module")
def front_settings() -> dict[str, Any]:
    """Alice's and Bob's tokens."""
    return {"auth": token_auth({ALICE: "alice@example.com", BOB: "bob@example.com"})}


@pytest.fixture
async def second_front(open_front: OpenFront) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client of another front of the app (the same settings, its own push and held calls)."""
    other = await open_front()
    async with other.http() as http:
        yield http


async def until_file(path: Path, *, timeout: float = WAIT) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.05)


class Session:
    """A 2025-11-25 host without the tasks capability (agno, google-adk, mcp 1.x): plain calls only."""

    def __init__(self, http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self.http = http
        self.url = url
        self.headers = headers
        self.ids = itertools.count(1)

    @classmethod
    async def open(cls, http: httpx.AsyncClient, url: str, token: str) -> Session:
        host = await LegacyMcp(url, http, headers=bearer(token)).handshake()
        return cls(http, url, {**legacy_headers(), **host.extra_headers})

    def as_principal(self, token: str) -> Session:
        """The same session ID presented with another principal's token."""
        return Session(self.http, self.url, {**self.headers, **bearer(token)})

    def through(self, http: httpx.AsyncClient) -> Session:
        """The same session, its requests sent through `http` (another front's client)."""
        return Session(http, self.url, self.headers)

    def message(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}

    async def notify(self, method: str, params: dict[str, Any]) -> int:
        body = {"jsonrpc": "2.0", "method": method, "params": params}
        return (await self.http.post(self.url, json=body, headers=self.headers)).status_code

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.post(self.message(method, params))

    async def post(self, message: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC response to `message`, whether the reply is JSON or an SSE stream."""
        reply = await self.http.post(self.url, json=message, headers=self.headers)
        frames = [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]
        body: dict[str, Any] = frames[-1] if frames else reply.json()
        return body


@asynccontextmanager
async def streamed(
    http: httpx.AsyncClient, url: str, message: dict[str, Any], headers: dict[str, str]
) -> AsyncGenerator[AsyncIterator[dict[str, Any]]]:
    async with http.stream("POST", url, content=json.dumps(message), headers=headers) as reply:
        assert reply.status_code == 200, reply.status_code
        yield sse_frames(reply)


@pytest.fixture
async def alice(front: InProcessFront, front_http: httpx.AsyncClient) -> Session:
    return await Session.open(front_http, front.url, ALICE)


def modern_call(name: str, arguments: dict[str, Any], *, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A plain 2026-07-28 `tools/call`: the envelope declares no tasks extension."""
    params = {"name": name, "arguments": arguments, "_meta": {**envelope(tasks=False), **(meta or {})}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def modern_headers(name: str) -> dict[str, str]:
    return {**base_headers("tools/call", name), **bearer(ALICE)}


async def outcome(frames: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    """The response frame that ends a call's stream."""
    with anyio.fail_after(WAIT):
        async for frame in frames:
            if "result" in frame or "error" in frame:
                return frame
    raise AssertionError("the call's stream ended without a response")


async def test_a_plain_calls_task_id_is_named_by_its_session_and_request() -> None:
    first = plain_call_task_id("hs1.session-a", 1)
    assert is_task_id(first) and first == plain_call_task_id("hs1.session-a", 1)
    assert len({first, plain_call_task_id("hs1.session-a", 2), plain_call_task_id("hs1.session-b", 1)}) == 3


# -- notifications/cancelled ---------------------------------------------------------------------


@pytest.mark.parametrize("to_second_front", [False, True], ids=["same front", "second front"])
async def test_notifications_cancelled_cancels_the_plain_calls_task_on_any_front(
    alice: Session, second_front: httpx.AsyncClient, gate: Path, to_second_front: bool
) -> None:
    call = alice.message("tools/call", {"name": "stepped", "arguments": {"gate": str(gate)}})
    async with streamed(alice.http, alice.url, call, alice.headers) as frames:
        await until_file(gate / "started")
        # The cancel finds the task by the ID its session and request name: a task under another ID would
        # outlive the cancel silently, so that is checked at once rather than by waiting for the tool to stop.
        task_id = plain_call_task_id(alice.headers["mcp-session-id"], call["id"])
        assert (await alice.request("tasks/get", {"taskId": task_id}))["result"]["status"] == "working"
        target = alice.through(second_front) if to_second_front else alice
        assert await target.notify("notifications/cancelled", {"requestId": call["id"]}) == 202
        await until_file(gate / "cancelled")
        assert "error" in await outcome(frames)


async def test_another_principals_cancel_does_nothing(
    alice: Session, second_front: httpx.AsyncClient, gate: Path
) -> None:
    call = alice.message(
        "tools/call", {"name": "stepped", "arguments": {"gate": str(gate)}, "_meta": {"progressToken": "p"}}
    )
    bob = alice.as_principal(BOB)
    async with streamed(alice.http, alice.url, call, alice.headers) as frames:
        await until_file(gate / "started")
        for through in (bob, bob.through(second_front)):
            assert await through.notify("notifications/cancelled", {"requestId": call["id"]}) == 202
        # Bob's cancel took milliseconds if it took; the next step's status line takes a heartbeat and a read.
        (gate / "next-1").write_text("1")
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "notifications/progress" and frame["params"]["message"] == "step 2":
                    break
        (gate / "next-2").write_text("1")
        (gate / "next-3").write_text("1")
        assert (await outcome(frames))["result"]["content"][0]["text"] == "3 steps"
    assert not (gate / "cancelled").exists()


async def test_a_request_id_used_twice_in_a_session_is_refused(alice: Session, gate: Path) -> None:
    """The ID names the call's task: a second call under it must not be taken for the first."""
    call = alice.message("tools/call", {"name": "stepped", "arguments": {"gate": str(gate), "steps": 0}})
    assert (await alice.post(call))["result"]["content"][0]["text"] == "0 steps"
    assert (await alice.post(call))["error"]["code"] == -32600


# -- a closed stream ---------------------------------------------------------------------------


async def _abandon(
    http: httpx.AsyncClient, url: str, message: dict[str, Any], headers: dict[str, str], ran: Path
) -> None:
    """Send the call, and close its connection once `ran` shows the work is under way."""
    async with anyio.create_task_group() as group:

        async def send() -> None:
            await http.post(url, content=json.dumps(message), headers=headers)

        group.start_soon(send)
        await until_file(ran)
        group.cancel_scope.cancel()


@pytest.mark.parametrize("kind", ["tool", "workflow tool"])
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_closing_a_plain_calls_stream_cancels_its_work(
    alice: Session, gate: Path, kind: str, revision: str
) -> None:
    if kind == "tool":
        name, arguments, ran, stopped = "stepped", {"gate": str(gate)}, gate / "started", gate / "cancelled"
    else:
        name, arguments = "fail", {"mode": "hang", "effects": str(gate)}
        ran, stopped = gate / "ran-hang", gate / "cancelled-hang"
    if revision == "2025-11-25":
        message, headers = alice.message("tools/call", {"name": name, "arguments": arguments}), alice.headers
    else:
        message, headers = modern_call(name, arguments), modern_headers(name)
    await _abandon(alice.http, alice.url, message, headers, ran)
    await until_file(stopped)


async def final_status(session: Session, task_id: str) -> str:
    with anyio.fail_after(WAIT):
        while True:
            status: str = (await session.request("tasks/get", {"taskId": task_id}))["result"]["status"]
            if status in TERMINAL:
                return status
            await anyio.sleep(0.1)


async def test_a_task_created_as_a_task_survives_its_client_going_away(
    alice: Session, front: InProcessFront, gate: Path
) -> None:
    async with front.http(headers=bearer(ALICE)) as http:
        await _survives_its_client_going_away(alice, front.url, http, gate)


async def _survives_its_client_going_away(alice: Session, url: str, http: httpx.AsyncClient, gate: Path) -> None:
    modern = TaskCalls(HttpMcp(url, http))
    # The folders first: a tool that starts before its folder exists fails and waits out a retry's backoff.
    (gate / "modern").mkdir()
    (gate / "legacy").mkdir()
    created = await modern.start("stepped", {"gate": str(gate / "modern")})
    legacy = (
        await alice.request(
            "tools/call", {"name": "stepped", "arguments": {"gate": str(gate / "legacy")}, "task": {"ttl": 60000}}
        )
    )["result"]["task"]
    await until_file(gate / "modern" / "started")
    await until_file(gate / "legacy" / "started")
    # The clients walk away from the streams they were following the tasks on.
    async with http_listen(url, http, listen_message([created["taskId"]])) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "notifications/tasks":
                    break
    waiting = alice.message("tasks/result", {"taskId": legacy["taskId"]})
    async with streamed(alice.http, alice.url, waiting, alice.headers) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "notifications/tasks/status":
                    break
    for folder in ("modern", "legacy"):
        for number in (1, 2, 3):
            (gate / folder / f"next-{number}").write_text("1")
    assert (await modern.wait_for(created["taskId"], TERMINAL))["status"] == "completed"
    assert await final_status(alice, legacy["taskId"]) == "completed"
    assert not (gate / "modern" / "cancelled").exists() and not (gate / "legacy" / "cancelled").exists()


# -- progress ---------------------------------------------------------------------------------


async def test_a_plain_call_with_a_progress_token_gets_each_status_line_in_order(alice: Session, gate: Path) -> None:
    call = alice.message(
        "tools/call", {"name": "stepped", "arguments": {"gate": str(gate)}, "_meta": {"progressToken": "steps"}}
    )
    progress: list[dict[str, Any]] = []
    async with streamed(alice.http, alice.url, call, alice.headers) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "notifications/progress":
                    progress.append(frame["params"])
                    (gate / f"next-{len(progress)}").write_text("1")
                elif "result" in frame or "error" in frame:
                    assert frame["result"]["content"][0]["text"] == "3 steps"
                    break
    assert [p["message"] for p in progress] == ["step 1 (1/3)", "step 2", "step 3"]
    assert [p["progress"] for p in progress] == [1, 2, 3]
    assert {p["progressToken"] for p in progress} == {"steps"}


async def test_a_workflow_tools_plain_call_reports_each_step(alice: Session, gate: Path) -> None:
    # No step waits: each status is replaced within milliseconds, and still none is lost.
    call = modern_call("release", {"ref": "v1", "effects": str(gate)}, meta={"progressToken": 7})
    messages: list[str] = []
    async with streamed(alice.http, alice.url, call, modern_headers("release")) as frames:
        with anyio.fail_after(WAIT):
            async for frame in frames:
                if frame.get("method") == "notifications/progress":
                    assert frame["params"]["progressToken"] == 7
                    assert frame["params"]["progress"] == len(messages) + 1
                    messages.append(frame["params"]["message"])
                elif "result" in frame or "error" in frame:
                    assert frame["result"]["structuredContent"]["steps"] == PIPELINE
                    break
    assert messages == [f"{step} ({number}/4)" for number, step in enumerate(PIPELINE, start=1)]


async def test_no_progress_without_a_token(alice: Session, gate: Path) -> None:
    call = alice.message("tools/call", {"name": "stepped", "arguments": {"gate": str(gate), "steps": 1}})
    async with streamed(alice.http, alice.url, call, alice.headers) as frames:
        await until_file(gate / "started")
        (gate / "next-1").write_text("1")
        frames_seen: list[dict[str, Any]] = []
        with anyio.fail_after(WAIT):
            async for frame in frames:
                frames_seen.append(frame)
                if "result" in frame or "error" in frame:
                    break
    assert [frame.get("method") for frame in frames_seen] == [None]
    assert frames_seen[0]["result"]["content"][0]["text"] == "1 steps"


async def test_the_mcp_client_gets_progress_and_its_cancel_stops_the_workflow(
    front: InProcessFront, gate: Path
) -> None:
    """The mcp 2.3 `Client` without the tasks extension: a progress callback, then a call it gives up on."""
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    http = front.http2(headers=bearer(ALICE))
    async with http, Client(streamable_http_client(front.url, http_client=http)) as client:
        assert client.protocol_version == "2026-07-28"
        (gate / "done").mkdir()
        arguments = {"ref": "v2", "effects": str(gate / "done")}
        with anyio.fail_after(WAIT):
            result = await client.call_tool("release", arguments, progress_callback=on_progress)
        assert not result.is_error
        assert seen == [f"{step} ({number}/4)" for number, step in enumerate(PIPELINE, start=1)]
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool("fail", {"mode": "hang", "effects": str(gate)})

                group.start_soon(call)
                await until_file(gate / "ran-hang")
                group.cancel_scope.cancel()
        await until_file(gate / "cancelled-hang")


async def test_notifications_cancelled_on_stdio_cancels_a_plain_workflow_tool_call(
    temporal: str, app_queue: str, gate: Path
) -> None:
    """On stdio the notification reaches the connection that carries the call (2026-07-28 keeps it there).

    The stdio server is a process of its own; the workers run in the test process.
    """
    command = [*CLI, "serve", "--transport", "stdio", "--temporal", temporal]
    command += ["--task-queue", app_queue, "--app", APP]
    with (gate / "stdio-front.log").open("wb") as stderr_log:
        process = await anyio.open_process(command, cwd=REPO_ROOT, env=child_env(), stderr=stderr_log)
        try:
            assert process.stdin is not None
            call = request_message(
                1, "tools/call", {"name": "fail", "arguments": {"mode": "hang", "effects": str(gate)}}
            )
            call["params"]["_meta"] = envelope(tasks=False)
            await process.stdin.send((json.dumps(call) + "\n").encode())
            await until_file(gate / "ran-hang")
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            await process.stdin.send((json.dumps(cancel) + "\n").encode())
            await until_file(gate / "cancelled-hang")
        finally:
            if process.stdin is not None:
                await process.stdin.aclose()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()
