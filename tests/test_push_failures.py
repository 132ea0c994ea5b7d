"""A push watcher whose Temporal fails: it backs off, logs once per failure streak, and ends its subscribers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.client import Client
from temporalio.service import RetryConfig

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.push.backoff import Backoff, GaveUpError
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.temporal.connection import data_converter
from mcp_tasks_temporal.temporal.ids import new_task_id
from tests.conftest import OpenFront
from tests.tcp_cut import CuttableRelay
from tests.test_push import http_listen, listen_message
from tests.tool_tasks import tool_task

pytestmark = pytest.mark.anyio

WATCH_LOGGER = "mcp_tasks_temporal.front.push.task_watch"
QUICK_RETRY = RetryConfig(max_retries=1, max_elapsed_time_millis=1000)


def test_backoff_doubles_up_to_its_cap_with_a_little_jitter() -> None:
    backoff = Backoff("polling", logging.getLogger("test"), initial_s=1, cap_s=5)
    delays = [backoff.next_delay() for _ in range(5)]
    assert all(low <= delay <= min(low + 0.1, 5) for low, delay in zip([1, 2, 4, 5, 5], delays, strict=True)), delays
    backoff.succeeded()
    assert 1 <= backoff.next_delay() <= 1.1, "a new streak starts from the first wait"


async def test_backoff_logs_once_per_streak_and_gives_up(caplog: pytest.LogCaptureFixture) -> None:
    backoff = Backoff(
        "polling task T", logging.getLogger("test.backoff"), initial_s=0.01, cap_s=0.02, give_up_after_s=0.2
    )
    with caplog.at_level(logging.WARNING, logger="test.backoff"):
        with pytest.raises(GaveUpError), anyio.fail_after(10):
            while True:
                await backoff.failed("UNAVAILABLE")
    assert [r.getMessage() for r in caplog.records].count(
        "polling task T is failing (UNAVAILABLE); retrying with backoff up to 0s"
    ) == 1
    assert len(caplog.records) == 1


async def test_a_watcher_whose_temporal_goes_away_ends_its_subscribers_with_a_reason(
    temporal_relay: CuttableRelay, caplog: pytest.LogCaptureFixture
) -> None:
    # One quick retry inside the SDK, so the watcher's own backoff is what the test sees.
    client = await Client.connect(temporal_relay.address, retry_config=QUICK_RETRY)
    gateway = TemporalTaskGateway(client, task_queue=f"no-worker-{new_task_id()}")
    task = tool_task("gated")
    await gateway.create(task, None)
    hub = TaskWatchHub(gateway, retry_initial_s=0.2, retry_cap_s=0.5, give_up_after_s=1)
    seen: list[dict[str, Any]] = []
    lost = anyio.Event()
    reasons: list[str] = []

    def on_lost(_task_id: str, reason: str) -> None:
        reasons.append(reason)
        lost.set()

    with caplog.at_level(logging.WARNING, logger=WATCH_LOGGER):
        async with hub.running():
            unsubscribe = hub.subscribe(task.task_id, None, seen.append, on_lost=on_lost)
            with anyio.fail_after(30):
                while not seen:
                    await anyio.sleep(0.05)
            with temporal_relay.cut(), anyio.fail_after(30):  # Temporal goes away for good, as far as it knows
                await lost.wait()
            unsubscribe()
    assert seen[0]["status"] == "working"
    assert reasons and "kept failing" in reasons[0], reasons
    messages = [r.getMessage() for r in caplog.records]
    assert sum("is failing" in m for m in messages) == 1, messages
    assert any(m.startswith(f"stopped watching task {task.task_id}") for m in messages), messages
    assert not any(r.exc_info for r in caplog.records), "one line, no traceback"


async def test_a_listen_whose_task_cannot_be_followed_ends_with_an_error_naming_it(
    open_front: OpenFront, temporal_relay: CuttableRelay, gate: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Temporal goes away under a front that pushes: the stream ends with -32603 and the task's ID, not silence."""
    # The SDK's own retries quick too (they last ten seconds by default): the front's give-up is what is tested.
    client = await Client.connect(temporal_relay.address, data_converter=data_converter(), retry_config=QUICK_RETRY)
    front = await open_front(client=client, push_give_up_s=0.5)
    async with front.http() as http:
        task_id = (await front.calls(http).start("gated", {"gate": str(gate)}))["taskId"]
        with caplog.at_level(logging.INFO, logger=WATCH_LOGGER):
            async with http_listen(front.url, http, listen_message([task_id]), timeout=30) as frames:
                ack = await anext(frames)
                assert ack["params"]["notifications"]["taskIds"] == [task_id]
                assert (await anext(frames))["params"]["status"] == "working"
                with temporal_relay.cut():
                    ending = await anext(frames)
                    while "error" not in ending:  # a change that raced the cut
                        ending = await anext(frames)
    (gate / "release").write_text("1")
    assert ending["id"] == 77 and ending["error"]["code"] == -32603, ending
    assert ending["error"]["data"] == {"taskIds": [task_id]}
    messages = [record.getMessage() for record in caplog.records]
    # Whichever read the cut hits first (the history or the status line), the watcher stops once, saying so.
    assert sum(m.startswith(f"stopped watching task {task_id}:") for m in messages) == 1, messages
    assert not any(record.exc_info for record in caplog.records), "one line, no traceback"
