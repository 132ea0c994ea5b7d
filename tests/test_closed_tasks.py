"""The front's memory of closed tasks: served without Temporal, never past the TTL, never to another principal."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_temporal.front.errors import TaskExpiredError
from mcp_tasks_temporal.front.gateway.closed_tasks import ClosedTaskCache
from mcp_tasks_temporal.temporal.connection import connect_temporal
from tests.clock import ManualClock
from tests.conftest import OpenFront
from tests.tcp_cut import CuttableRelay

# -- the cache on its own -------------------------------------------------------


def _task(n: int, padding: int = 0) -> dict[str, Any]:
    return {"taskId": f"t{n}", "status": "completed", "result": {"content": [{"type": "text", "text": "x" * padding}]}}


def test_least_recently_read_entries_go_first_when_full() -> None:
    cache = ClosedTaskCache(max_entries=2)
    cache.put("a", _task(1), created_at_ms=0, ttl_ms=None)
    cache.put("b", _task(2), created_at_ms=0, ttl_ms=None)
    assert cache.get("a", now_ms=1) is not None  # "a" is now the most recent
    cache.put("c", _task(3), created_at_ms=0, ttl_ms=None)
    assert cache.get("b", now_ms=1) is None
    assert cache.get("a", now_ms=1) == _task(1)
    assert cache.get("c", now_ms=1) == _task(3)


def test_the_size_bound_evicts_and_oversized_results_are_not_kept() -> None:
    cache = ClosedTaskCache(max_bytes=3_000)
    cache.put("a", _task(1, padding=1_000), created_at_ms=0, ttl_ms=None)
    cache.put("b", _task(2, padding=1_000), created_at_ms=0, ttl_ms=None)
    cache.put("c", _task(3, padding=1_000), created_at_ms=0, ttl_ms=None)
    assert len(cache) == 2 and cache.get("a", now_ms=1) is None
    cache.put("huge", _task(4, padding=300 * 1024), created_at_ms=0, ttl_ms=None)
    assert cache.get("huge", now_ms=1) is None


def test_an_entry_past_its_ttl_is_expired_not_served() -> None:
    cache = ClosedTaskCache()
    cache.put("a", _task(1), created_at_ms=1_000, ttl_ms=500)
    assert cache.get("a", now_ms=1_499) == _task(1)
    with pytest.raises(TaskExpiredError):
        cache.get("a", now_ms=1_500)
    assert cache.get("a", now_ms=1_501) is None, "an expired entry is dropped"


def test_an_entry_older_than_max_age_is_asked_again() -> None:
    cache = ClosedTaskCache(max_age_s=0)
    cache.put("a", _task(1), created_at_ms=0, ttl_ms=None)
    assert cache.get("a", now_ms=1) is None


def test_a_disabled_cache_keeps_nothing() -> None:
    cache = ClosedTaskCache(max_entries=0)
    cache.put("a", _task(1), created_at_ms=0, ttl_ms=None)
    assert cache.get("a", now_ms=1) is None


# -- on a front whose Temporal goes away ----------------------------------------


@pytest.mark.anyio
async def test_a_closed_task_stays_readable_from_the_front_that_saw_it_while_temporal_is_down(
    open_front: OpenFront, temporal_relay: CuttableRelay, gate: Path
) -> None:
    # Only the front reaches Temporal through the relay: cut, Temporal is gone as far as the front can tell.
    front = await open_front(client=await connect_temporal(temporal_relay.address))
    async with front.http() as http:
        mcp = front.calls(http)
        done = await mcp.wait_for((await mcp.start("double", {"x": 21}))["taskId"])
        assert done["status"] == "completed"
        running = (await mcp.start("gated", {"gate": str(gate)}))["taskId"]
        with temporal_relay.cut():
            again = (await mcp.get(done["taskId"])).result
            assert again == done, "a closed task never changes, so the front answers from what it saw"
            assert (await mcp.get(running)).error["code"] == -32603, "an open task still needs Temporal"


@pytest.mark.anyio
async def test_a_remembered_closed_task_expires_with_its_ttl(open_front: OpenFront) -> None:
    clock = ManualClock()
    front = await open_front(clock=clock)
    async with front.http() as http:
        mcp = front.calls(http)
        created = await mcp.start("brief", {"x": 7})
        ttl = timedelta(milliseconds=created["ttlMs"])
        assert ttl == timedelta(seconds=3)
        done = await mcp.wait_for(created["taskId"])
        assert done["status"] == "completed"
        clock.advance(ttl - timedelta(milliseconds=1))
        assert (await mcp.get(created["taskId"])).result == done, "remembered until its TTL runs out"
        clock.advance(timedelta(milliseconds=1))
        assert (await mcp.get(created["taskId"])).error["code"] == -32602
        assert (await mcp.cancel(created["taskId"])).error["code"] == -32602
        assert (await mcp.update(created["taskId"], {})).error["code"] == -32602
