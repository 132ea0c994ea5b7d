"""Push: `subscriptions/listen` with `taskIds` delivers every task change, over HTTP and stdio.

The HTTP tests drive the in-process front; a subscriber on another front server (a process of its own) and
the stdio server are the end-to-end ones, over a real socket and real pipes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.conftest import Stack
from tests.front_app import InProcessFront
from tests.processes import REPO_ROOT, child_env
from tests.wire import TERMINAL, HttpMcp, StdioMcp, TaskCalls, base_headers, envelope, sse_frames

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}
SUB = "io.modelcontextprotocol/subscriptionId"
UNKNOWN = "00000000-0000-4000-8000-000000000000"
LISTEN_TIMEOUT = 30
"""Bound on a whole listen exchange: a stream that never acks or never ends fails its test instead of hanging it."""
REFUSAL_TIMEOUT = 30


def listen_message(task_ids: list[str], request_id: int = 77, *, tasks: bool = True, **flags: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"taskIds": task_ids, **flags},
            "_meta": envelope(tasks=tasks, capabilities=ELICIT),
        },
    }


@asynccontextmanager
async def http_listen(
    url: str,
    http: httpx.AsyncClient,
    message: dict[str, Any],
    *,
    timeout: float = LISTEN_TIMEOUT,
    token: str | None = None,
) -> AsyncGenerator[AsyncIterator[dict[str, Any]]]:
    headers = base_headers("subscriptions/listen")
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    with anyio.fail_after(timeout):
        async with http.stream("POST", url, content=json.dumps(message), headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            assert response.headers["content-type"].startswith("text/event-stream")
            yield sse_frames(response)


async def collect_until_terminal(
    frames: AsyncIterator[dict[str, Any]], task_id: str, seen: list[dict[str, Any]]
) -> None:
    async for frame in frames:
        seen.append(frame)
        params = frame.get("params", {})
        if (
            frame.get("method") == "notifications/tasks"
            and params.get("taskId") == task_id
            and params["status"] in TERMINAL
        ):
            return


async def test_listen_acks_known_tasks_then_pushes_every_change_in_order(
    front: InProcessFront, front_mcp: TaskCalls, front_http: httpx.AsyncClient
) -> None:
    mcp = front_mcp
    created = await mcp.start("pick_variant", capabilities=ELICIT)
    task_id = created["taskId"]
    seen: list[dict[str, Any]] = []
    message = listen_message([task_id, UNKNOWN], toolsListChanged=True)
    async with http_listen(front.url, front_http, message) as frames:
        first = await anext(frames)
        assert first["method"] == "notifications/subscriptions/acknowledged"
        assert first["params"]["notifications"]["taskIds"] == [task_id]
        assert first["params"]["notifications"]["toolsListChanged"] is True
        assert first["params"]["_meta"][SUB] == 77
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(collect_until_terminal, frames, task_id, seen)
                waiting = await mcp.wait_for(task_id, lambda t: len(t.get("inputRequests", {})) == 2)
                color, size = sorted(waiting["inputRequests"], key=lambda k: "size" in k)
                await mcp.update(task_id, {color: {"action": "accept", "content": {"color": "red"}}})
                await mcp.update(task_id, {size: {"action": "accept", "content": {"size": "XL"}}})
    notes = [f["params"] for f in seen if f.get("method") == "notifications/tasks"]
    assert all(n["_meta"][SUB] == 77 for n in notes)
    assert all(f.get("method") in ("notifications/tasks",) for f in seen), "no progress or log notifications"
    outstanding = [len(n.get("inputRequests", {})) for n in notes if n["status"] == "input_required"]
    assert 2 in outstanding and 1 in outstanding, "the partial answer is a change of its own"
    assert notes[-1]["status"] == "completed"
    assert notes[-1]["result"]["content"][0]["text"] == "XL red"
    got = (await mcp.get(task_id)).result
    assert {k: v for k, v in notes[-1].items() if k != "_meta"} == {
        k: v for k, v in got.items() if k not in ("_meta", "resultType")
    }
    statuses = [n["status"] for n in notes]
    assert statuses.index("completed") == len(statuses) - 1


async def test_listen_for_tasks_without_the_extension_is_refused(
    front: InProcessFront, front_mcp: TaskCalls, front_http: httpx.AsyncClient
) -> None:
    created = await front_mcp.start("double", {"x": 1})
    with anyio.fail_after(REFUSAL_TIMEOUT):  # a listen served by mistake would stream forever
        reply = await HttpMcp(front.url, front_http).post(
            listen_message([created["taskId"]], tasks=False), base_headers("subscriptions/listen")
        )
    assert reply.status == 400
    assert reply.error["code"] == -32021


async def test_push_reaches_a_subscriber_on_another_front(
    stack: Stack, mcp: TaskCalls, http: httpx.AsyncClient, gate: Path
) -> None:
    """End to end: front processes of their own, a real socket, uvicorn's streaming."""
    other_front = stack.add_front()
    created = await mcp.start("gated", {"gate": str(gate)})
    notes: list[dict[str, Any]] = []
    async with http_listen(other_front, http, listen_message([created["taskId"]])) as frames:
        ack = await anext(frames)
        assert ack["params"]["notifications"]["taskIds"] == [created["taskId"]]
        with anyio.fail_after(30):
            async for frame in frames:
                notes.append(frame["params"])
                if frame["params"].get("statusMessage"):
                    break  # progress shows on the stream as statusMessage
            (gate / "release").write_text("1")
            async for frame in frames:
                notes.append(frame["params"])
                if frame["params"]["status"] in TERMINAL:
                    break
    assert notes[0]["status"] == "working"
    assert notes[-1]["status"] == "completed"


async def test_push_over_stdio(temporal: str, app_queue: str, front_mcp: TaskCalls) -> None:
    """The stdio server is a process of its own; the workers and the front that answers are in-process."""
    mcp = front_mcp
    command = [sys.executable, "-m", "mcp_tasks_temporal", "serve", "--transport", "stdio", "--temporal", temporal]
    command += ["--task-queue", app_queue, "--app", "tests.fixture_app:app"]
    async with await anyio.open_process(command, cwd=REPO_ROOT, env=child_env()) as process:
        stdio = StdioMcp(process)
        calls = TaskCalls(stdio)
        created = await calls.start("greet_someone", capabilities=ELICIT)
        task_id = created["taskId"]
        assert process.stdin is not None
        await process.stdin.send((json.dumps(listen_message([task_id], request_id=900)) + "\n").encode())
        with anyio.fail_after(30):
            ack = json.loads(await stdio.read_line())
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"]["taskIds"] == [task_id]
            waiting = await mcp.wait_for(task_id, ["input_required"])
            [key] = waiting["inputRequests"]
            await mcp.update(task_id, {key: {"action": "accept", "content": {"name": "Stdio"}}})
            statuses: list[str] = []
            while True:
                frame = json.loads(await stdio.read_line())
                assert frame["method"] == "notifications/tasks" and frame["params"]["_meta"][SUB] == 900
                statuses.append(frame["params"]["status"])
                if frame["params"]["status"] == "completed":
                    assert frame["params"]["result"]["content"][0]["text"] == "Hello, Stdio!"
                    break
        assert "input_required" in statuses
        await process.stdin.send(
            (
                json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 900}}) + "\n"
            ).encode()
        )
        ping = await calls.get(task_id)
        assert ping.result["status"] == "completed"
        await process.stdin.aclose()
        with anyio.fail_after(10):
            await process.wait()


async def test_core_events_keep_flowing_on_a_task_listen(
    front: InProcessFront, front_mcp: TaskCalls, front_http: httpx.AsyncClient, gate: Path
) -> None:
    mcp = front_mcp
    created = await mcp.start("gated", {"gate": str(gate)})
    message = listen_message([created["taskId"]], toolsListChanged=True)
    async with http_listen(front.url, front_http, message) as frames:
        assert (await anext(frames))["method"] == "notifications/subscriptions/acknowledged"
        with anyio.fail_after(20):
            assert (await mcp.call_tool("announce", tasks=False)).result["content"][0]["text"] == "announced"
            async for frame in frames:
                if frame.get("method") == "notifications/tools/list_changed":
                    assert frame["params"]["_meta"][SUB] == 77
                    break
    (gate / "release").write_text("1")
