"""The peer comparison's report (pure logic): the targets name mcp-agent and fastmcp-tasks on Redis, and a run
without some peer still renders."""

from __future__ import annotations

from typing import Any

import httpx

from benchmarks.peer_servers import McpAgentServer, SessionHttpMcp, TaskServer
from benchmarks.peers import Column, Results, ratios, table
from benchmarks.throughput import Op
from tests.wire import HttpMcp, TaskCalls

HTTP = httpx.AsyncClient()


async def _never() -> Any:
    raise AssertionError("a report does not call the servers")


def _op(ms: float) -> Op:
    return Op("op", _never, [ms])


def _column(server: Any, zero: float, creates: float) -> Column:
    keys = ("zero", "zero_advised", "get_working", "get_done", "create")
    return Column(server, {key: _op(zero) for key in keys}, creates_per_s=creates)


def _results(*columns: Column) -> Results:
    return Results(list(columns), _op(10.0), _op(5.0), _op(2.0), _op(55.0), _op(60.0), raw_starts_per_s=50.0)


def _task_server(name: str) -> TaskServer:
    return TaskServer(name, TaskCalls(HttpMcp("http://127.0.0.1:9/mcp", HTTP)), task_queue="bench")


def test_targets_are_marked_against_mcp_agent_and_redis_and_the_memory_column_is_context() -> None:
    ours = _column(_task_server("ours"), 100.0, 40.0)
    memory = _column(_task_server("fastmcp-tasks memory"), 50.0, 80.0)
    redis = _column(_task_server("fastmcp-tasks Redis"), 200.0, 40.0)
    agent = _column(McpAgentServer(SessionHttpMcp("http://127.0.0.1:9/mcp", HTTP)), 50.0, 20.0)
    lines = ratios(_results(ours, memory, redis, agent)).splitlines()

    def line(start: str) -> str:
        return next(text for text in lines if text.startswith(start))

    assert line("0 s tool result in hand, 10 ms polling, ours / fastmcp-tasks memory").endswith(": 2.00x")
    assert "target <= 1x: met" in line("0 s tool result in hand, 10 ms polling, ours / fastmcp-tasks Redis")
    assert "target <= 1x: missed" in line("0 s tool result in hand, 10 ms polling, ours / mcp-agent")
    assert "target >= 0.8x: met" in line("creates/s, ours / fastmcp-tasks Redis")
    assert line("creates/s, ours / mcp-agent").endswith(": 2.00x"), "creates/s has a target against Redis only"
    assert "target <= raw + 3 ms: missed" in line("create (long task), ours")


def test_a_run_with_no_peer_renders_ours_and_the_raw_calls_alone() -> None:
    results = _results(_column(_task_server("ours"), 100.0, 40.0))
    rendered = table(results)
    assert len({row.count("|") for row in rendered.splitlines() if row.startswith("|")}) == 1
    assert "fastmcp" not in ratios(results)
    assert "mcp-agent" not in ratios(results)


def test_each_50_ms_ratio_divides_by_the_plain_call_sampled_in_its_own_rounds() -> None:
    ours = _column(_task_server("ours"), 100.0, 40.0)
    ours.ops["fifty"], ours.ops["fifty_advised"] = _op(82.5), _op(90.0)
    lines = ratios(_results(ours)).splitlines()
    [polling] = [text for text in lines if text.startswith("50 ms tool, task-capable call (10 ms polling)")]
    [advised] = [text for text in lines if text.startswith("50 ms tool, task-capable call (advised cadence)")]
    assert "82.5 / 55.0 ms = 1.50x" in polling and "met" in polling
    assert "90.0 / 60.0 ms = 1.50x" in advised and "met" in advised
