"""A long wait survives Temporal dropping the front's calls: the front retries, then tells the client to.

The front reaches Temporal through a relay the test cuts: every call fails while it is
cut, as when Temporal cancels a long poll or restarts. A client polling a task meanwhile
gets -32603 marked retryable, reads again with backoff, and its wait ends with the task.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal.client import TasksClient
from mcp_tasks_temporal.client._handle import TaskHandle
from mcp_tasks_temporal.temporal.connection import connect_temporal
from tests.conftest import OpenFront
from tests.tcp_cut import CuttableRelay

pytestmark = pytest.mark.anyio

CUT_S = 1.5
"""How long the cut lasts after the front gave up on its own retries (about a second): the client must retry too."""


async def test_a_wait_reads_through_a_cut_of_the_fronts_temporal_calls(
    open_front: OpenFront, temporal_relay: CuttableRelay, gate: Path, caplog: pytest.LogCaptureFixture
) -> None:
    relay = temporal_relay
    # Only the front reaches Temporal through the relay: the workers keep their own connection.
    front = await open_front(client=await connect_temporal(relay.address))
    async with front.http2() as http, TasksClient(front.url, journal=None, push=False, http_client=http) as client:
        handle = await client.start_tool("gated", {"gate": str(gate)})
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(60):
            while not (gate / "started").exists():
                await anyio.sleep(0.05)
        waited: list[str] = []
        async with anyio.create_task_group() as group:

            async def wait() -> None:
                waited.append((await handle.wait()).status)

            group.start_soon(wait)
            with relay.cut():
                with pytest.raises(MCPError) as dropped:
                    await handle.get()
                assert dropped.value.code == -32603 and dropped.value.data == {"retryable": True}
                cut_at = time.monotonic()
                while time.monotonic() - cut_at < CUT_S:
                    await anyio.sleep(0.1)
            (gate / "release").write_text("1")
            with anyio.fail_after(60):
                while not waited:
                    await anyio.sleep(0.05)
        assert waited == ["completed"]
    assert any(record.getMessage().startswith("Temporal call failed") for record in caplog.records)
