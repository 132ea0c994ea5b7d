"""One caller cannot cost the others through `subscriptions/listen`: task IDs per listen and listens per caller are
bounded, each with its own error and the limit in `data`, and an acknowledgement reads IDs nobody issued without
a Temporal call per ID."""

from __future__ import annotations

import json
import math
import uuid
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
import httpx
import pytest
from mcp.server.auth.provider import principal_components
from mcp.server.request_state import compact_json
from mcp_types import INVALID_PARAMS
from starlette.types import ASGIApp, Receive, Scope, Send
from temporalio.client import Client

from mcp_tasks_temporal import BearerAuth
from mcp_tasks_temporal.front.errors import TOO_MANY_LISTENS
from mcp_tasks_temporal.front.gateway.reads import LISTED_IDS_PER_QUERY, owned_count
from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from mcp_tasks_temporal.front.push.listen import UNLISTED_DESCRIBED_MAX
from mcp_tasks_temporal.front.push.listen_limits import ListenLimits
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.feed_contract import FEED_SHARDS
from mcp_tasks_temporal.temporal.ids import task_workflow_id
from tests.asgi import StreamingASGITransport
from tests.conftest import OpenFront
from tests.front_app import InProcessFront, fresh_app, in_process_front
from tests.test_push import listen_message
from tests.wire import Reply, base_headers, sse_frames

pytestmark = pytest.mark.anyio

TOKENS = {"alice-token": "alice", "bob-token": "bob"}
ACKED = "notifications/subscriptions/acknowledged"


async def refused(http: httpx.AsyncClient, url: str, message: dict[str, Any], token: str | None = None) -> Reply:
    """A listen the front answers with an error, not a stream."""
    headers = base_headers("subscriptions/listen")
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    with anyio.fail_after(30):
        reply = Reply.of(await http.post(url, content=json.dumps(message), headers=headers))
    assert reply.status != 500
    return reply


@asynccontextmanager
async def held_listen(
    http: httpx.AsyncClient, url: str, task_ids: list[str], *, token: str | None = None, request_id: int = 77
) -> AsyncGenerator[dict[str, Any]]:
    """A listen kept open while the block runs; yields its acknowledgement."""
    headers = base_headers("subscriptions/listen")
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    message = listen_message(task_ids, request_id)
    with anyio.fail_after(60):
        async with http.stream("POST", url, content=json.dumps(message), headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            frames = sse_frames(response)
            ack = await anext(frames)
            assert ack["method"] == ACKED, ack
            yield ack


def from_address(app: ASGIApp, host: str) -> ASGIApp:
    """`app` as requests from `host` reach it (the client address an anonymous caller is counted by)."""

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        await app({**scope, "client": (host, 40_000)}, receive, send)

    return served


def random_ids(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


async def test_a_listen_naming_more_task_ids_than_a_listen_may_is_refused_with_the_limit(
    open_front: OpenFront,
) -> None:
    front = await open_front(max_listen_task_ids=5)
    async with front.http() as http:
        reply = await refused(http, front.url, listen_message(random_ids(6)))
        assert reply.error["code"] == INVALID_PARAMS
        assert reply.error["data"] == {"maxTaskIds": 5}
        async with held_listen(http, front.url, random_ids(5)) as ack:
            assert ack["params"]["notifications"]["taskIds"] == []


async def test_a_caller_at_its_listen_limit_is_refused_one_more_and_another_principal_is_not(
    open_front: OpenFront,
) -> None:
    front = await open_front(max_listens_per_caller=2, auth=BearerAuth(StaticTokenVerifier(TOKENS)))
    async with front.http() as http, AsyncExitStack() as held:
        for request_id in (1, 2):
            await held.enter_async_context(
                held_listen(http, front.url, random_ids(3), token="alice-token", request_id=request_id)
            )
        reply = await refused(http, front.url, listen_message(random_ids(3), 3), token="alice-token")
        assert reply.error["code"] == TOO_MANY_LISTENS
        assert reply.error["data"] == {"maxListens": 2}
        # Bob is not counted with Alice: he listens as often as he may, while Alice still holds hers.
        for request_id in (4, 5):
            await held.enter_async_context(
                held_listen(http, front.url, random_ids(3), token="bob-token", request_id=request_id)
            )
        assert (await refused(http, front.url, listen_message([], 6), token="bob-token")).error["code"] == (
            TOO_MANY_LISTENS
        )
    # Closed, they count no more.
    async with front.http() as http, held_listen(http, front.url, random_ids(3), token="alice-token"):
        pass


async def test_anonymous_callers_are_counted_by_their_address(open_front: OpenFront) -> None:
    front = await open_front(max_listens_per_caller=1)
    here = httpx.AsyncClient(transport=StreamingASGITransport(from_address(front.asgi, "10.0.0.1"), state=front.state))
    there = httpx.AsyncClient(transport=StreamingASGITransport(from_address(front.asgi, "10.0.0.2"), state=front.state))
    async with here, there, held_listen(here, front.url, random_ids(2)):
        assert (await refused(here, front.url, listen_message(random_ids(2), 2))).error["code"] == TOO_MANY_LISTENS
        async with held_listen(there, front.url, random_ids(2), request_id=3):
            pass


class CountedCalls:
    """The Temporal RPCs a client makes, by name: its service client's calls, counted as they go."""

    def __init__(self, client: Client) -> None:
        self.calls: Counter[str] = Counter()
        service = client.service_client
        call = service._rpc_call  # pyright: ignore[reportPrivateUsage]

        async def counted(rpc: str, *args: Any, **kwargs: Any) -> Any:
            self.calls[rpc] += 1
            return await call(rpc, *args, **kwargs)

        service._rpc_call = counted  # pyright: ignore[reportPrivateUsage]

    def since(self, before: Counter[str]) -> Counter[str]:
        return self.calls - before


@asynccontextmanager
async def counted_front(
    temporal: str, app_spec: str, app_queue: str, **settings: Any
) -> AsyncGenerator[tuple[InProcessFront, CountedCalls]]:
    """A front on a Temporal client of its own, whose every call is counted (the workers' are not)."""
    client = await connect_temporal(temporal)
    calls = CountedCalls(client)
    async with in_process_front(fresh_app(app_spec), client, task_queue=app_queue, **settings) as front:
        yield front, calls


async def acked(front: InProcessFront, task_ids: list[str], token: str | None = None) -> list[str]:
    async with front.http() as http, held_listen(http, front.url, task_ids, token=token) as ack:
        return ack["params"]["notifications"]["taskIds"]


@pytest.mark.parametrize("push", ["feed", "poll"])
async def test_an_ack_reads_ids_nobody_issued_with_no_call_per_id(
    temporal: str, app_spec: str, app_queue: str, push: str
) -> None:
    principal = f"ack-{uuid.uuid4()}"  # a principal of one task
    auth = BearerAuth(StaticTokenVerifier({"token": principal}))
    async with counted_front(temporal, app_spec, app_queue, push=push, auth=auth) as (front, calls):
        async with front.http(headers={"authorization": "Bearer token"}) as http:
            mcp = front.calls(http)
            mine = (await mcp.start("double", {"x": 2}))["taskId"]
            assert (await mcp.wait_for(mine))["status"] == "completed"
        by_size: dict[int, Counter[str]] = {}
        for size in (600, 6_000):
            before = Counter(calls.calls)
            assert await acked(front, [*random_ids(size), mine], token="token") == [mine]
            by_size[size] = calls.since(before)
    small, large = by_size[600], by_size[6_000]
    assert large["describe_workflow_execution"] <= 1, large  # the one task that exists, at most
    assert large["query_workflow"] <= (FEED_SHARDS if push == "feed" else 0), large
    # Visibility lists the principal's own tasks (a count and a page), once more after its lag for what it did
    # not list: the same calls for ten times the IDs.
    visibility = ("list_workflow_executions", "count_workflow_executions")
    assert [large[rpc] for rpc in visibility] == [small[rpc] for rpc in visibility], (small, large)
    assert sum(large[rpc] for rpc in visibility) <= 4, large
    assert large["describe_workflow_execution"] == small["describe_workflow_execution"]


async def test_an_ack_of_many_ids_of_a_principal_with_more_tasks_reads_the_ids_from_visibility_not_one_by_one(
    temporal: str, app_spec: str, app_queue: str
) -> None:
    """An owner with more tasks than a listen names is not paged through: visibility is asked for the IDs named,
    500 a call, and still no ID nobody issued is described."""
    principal = f"busy-{uuid.uuid4()}"
    auth = BearerAuth(StaticTokenVerifier({"token": principal}))
    size = LISTED_IDS_PER_QUERY + 1
    async with counted_front(temporal, app_spec, app_queue, push="poll", auth=auth) as (front, calls):
        token = await auth.verifier.verify_token("token")
        assert token is not None
        owner = front.gateway.owner_keying.owner_key(compact_json(principal_components(token)))
        prefix = task_workflow_id(owner, "")
        # Executions under the owner's prefix, on a queue nobody polls, stand for its tasks; they end on their own.
        client = await connect_temporal(temporal)
        nobody = f"nobody-{uuid.uuid4()}"
        starts = anyio.Semaphore(32)

        async def start_one() -> None:
            async with starts:
                await client.start_workflow(
                    "Nothing", id=f"{prefix}{uuid.uuid4()}", task_queue=nobody, execution_timeout=timedelta(minutes=2)
                )

        async with anyio.create_task_group() as group:
            for _ in range(size + 1):
                group.start_soon(start_one)
        with anyio.fail_after(30):
            while await owned_count(client, prefix) != size + 1:
                await anyio.sleep(0.1)
        before = Counter(calls.calls)
        assert await acked(front, random_ids(size), token="token") == []
        made = calls.since(before)
    assert made["describe_workflow_execution"] == 0, made
    # Visibility is asked twice (once more after its lag), each time a count and the IDs, 500 a call.
    assert made["count_workflow_executions"] == 2, made
    assert made["list_workflow_executions"] == 2 * math.ceil(size / LISTED_IDS_PER_QUERY), made


async def test_one_acknowledgement_at_a_time_per_caller_and_none_waits_for_another_callers() -> None:
    limits = ListenLimits(max_task_ids=10, max_listens=3)
    order: list[str] = []
    with limits.held("alice"), limits.held("alice"), limits.held("bob"):
        first_in = anyio.Event()
        release = anyio.Event()

        async def first() -> None:
            async with limits.acknowledging("alice"):
                order.append("alice 1 in")
                first_in.set()
                await release.wait()
                order.append("alice 1 out")

        async def second() -> None:
            async with limits.acknowledging("alice"):
                order.append("alice 2 in")

        async with anyio.create_task_group() as group:
            group.start_soon(first)
            await first_in.wait()
            group.start_soon(second)
            with anyio.fail_after(5):
                async with limits.acknowledging("bob"):
                    order.append("bob in")  # while Alice's first is still acknowledging
            release.set()
    assert order == ["alice 1 in", "bob in", "alice 1 out", "alice 2 in"]
    assert limits.open_listens("alice") == limits.open_listens("bob") == 0


async def test_a_few_ids_visibility_does_not_list_are_still_described(
    temporal: str, app_spec: str, app_queue: str
) -> None:
    """A task created a moment before the listen may be missing from visibility: a listen naming a few such IDs
    reads each, so a task that exists is never left out for visibility's lag."""
    async with counted_front(temporal, app_spec, app_queue, push="poll") as (front, calls):
        before = Counter(calls.calls)
        assert await acked(front, random_ids(UNLISTED_DESCRIBED_MAX)) == []
        assert calls.since(before)["describe_workflow_execution"] == UNLISTED_DESCRIBED_MAX
