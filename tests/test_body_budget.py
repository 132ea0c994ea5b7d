"""Request bodies taken in at once are bounded per front: a request that does not fit waits, unread, and one that
waits too long is refused with a JSON-RPC error and HTTP 503, never a 500."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from mcp_tasks_temporal.front.errors import BODIES_IN_FLIGHT
from mcp_tasks_temporal.front.http.body_budget import BodyBudget
from tests.conftest import OpenFront
from tests.front_app import InProcessFront
from tests.wire import Reply, base_headers, request_message

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


class HeldBody:
    """A `tools/call` body of about `size` bytes, sent up to its last byte, which waits for `release`."""

    def __init__(self, size: int) -> None:
        message = request_message(1, "tools/call", {"name": "echo", "arguments": {"text": "x" * (size - 400)}})
        self.data = json.dumps(message).encode()
        self.reading = anyio.Event()
        """Set once the front asked for the body: it was admitted."""
        self.release = anyio.Event()

    async def chunks(self) -> AsyncIterator[bytes]:
        self.reading.set()
        yield self.data[:-1]
        await self.release.wait()
        yield self.data[-1:]

    async def send(self, front: InProcessFront, http: httpx.AsyncClient) -> Reply:
        headers = {**base_headers("tools/call", "echo"), "content-length": str(len(self.data))}
        return Reply.of(await http.post(front.url, content=self.chunks(), headers=headers))


async def test_a_body_that_does_not_fit_beside_those_in_flight_waits_unread_and_then_is_answered(
    open_front: OpenFront,
) -> None:
    front = await open_front(max_body_bytes=MIB, max_body_bytes_in_flight=2 * MIB, body_wait_s=30)
    bodies = [HeldBody(MIB - 1000) for _ in range(3)]
    replies: list[Reply] = []
    async with front.http() as http, anyio.create_task_group() as group:

        async def send(body: HeldBody) -> None:
            replies.append(await body.send(front, http))

        for body in bodies:
            group.start_soon(send, body)
        with anyio.fail_after(30):
            await bodies[0].reading.wait()
            await bodies[1].reading.wait()
        await anyio.wait_all_tasks_blocked()
        assert not bodies[2].reading.is_set(), "a third body was read beside two of about 1 MiB each"
        bodies[0].release.set()
        with anyio.fail_after(30):
            await bodies[2].reading.wait()
        bodies[1].release.set()
        bodies[2].release.set()
    assert [reply.status for reply in replies] == [200, 200, 200]
    assert all(reply.result["content"][0]["text"].startswith("xxx") for reply in replies)


async def test_a_body_that_waits_too_long_is_refused_unread_with_the_limit_and_a_retry_after(
    open_front: OpenFront,
) -> None:
    front = await open_front(max_body_bytes=MIB, max_body_bytes_in_flight=MIB, body_wait_s=0.2)
    held, late = HeldBody(MIB - 1000), HeldBody(MIB - 1000)
    replies: list[Reply] = []
    async with front.http() as http, anyio.create_task_group() as group:

        async def send() -> None:
            replies.append(await held.send(front, http))

        group.start_soon(send)
        with anyio.fail_after(30):
            await held.reading.wait()
        headers = {**base_headers("tools/call", "echo"), "content-length": str(len(late.data))}
        response = await http.post(front.url, content=late.chunks(), headers=headers)
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        refused = Reply.of(response).error
        assert refused["code"] == BODIES_IN_FLIGHT
        assert refused["data"] == {"maxBodyBytesInFlight": MIB}
        assert not late.reading.is_set(), "a refused body is never read"
        held.release.set()
    assert replies[0].status == 200
    # The room is back: the same request goes through now.
    async with front.http() as http:
        again = HeldBody(MIB - 1000)
        again.release.set()
        assert (await again.send(front, http)).status == 200


async def test_a_small_request_fits_beside_a_large_one_waiting() -> None:
    budget = BodyBudget(1000)
    assert await budget.take(800, wait_s=0)
    admitted: list[int] = []

    async def take(size: int) -> None:
        if await budget.take(size, wait_s=5):
            admitted.append(size)

    async with anyio.create_task_group() as group:
        group.start_soon(take, 900)
        await anyio.wait_all_tasks_blocked()
        await take(150)  # fits now, beside the 800, although the 900 came first
        assert admitted == [150]
        budget.give_back(800)
        budget.give_back(150)
    assert admitted == [150, 900]
    assert budget.peak <= budget.capacity


async def test_a_waiter_that_goes_away_leaves_nothing_counted() -> None:
    budget = BodyBudget(1000)
    assert await budget.take(1000, wait_s=0)
    with anyio.move_on_after(0.05):
        await budget.take(500, wait_s=10)
    budget.give_back(1000)
    assert budget.in_flight == 0
    assert await budget.take(1000, wait_s=0)
