"""`mcp-tasks-temporal dev`: one command, state kept in its directory across restarts, Ctrl-C stops everything."""

from __future__ import annotations

import signal
import socket
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.processes import CLI, Process, free_port, wait_until
from tests.wire import HttpMcp, TaskCalls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def start_dev(tmp_path: Path, state: Path, port: int, temporal_port: int) -> Process:
    command = [*CLI, "dev", "--app", "tests.fixture_app:app", "--state-dir", str(state), "--port", str(port)]
    command += ["--temporal-port", str(temporal_port), "--ui-port", "0"]
    process = Process(f"dev-{port}", command, tmp_path / f"dev-{port}-{free_port()}.log").start()
    wait_until(lambda: "Press Ctrl-C to stop." in process.log() or not process.alive, timeout=60, what="dev")
    assert process.alive, process.log()
    return process


async def test_tasks_survive_a_dev_restart_and_ctrl_c_stops_all_three(
    tmp_path: Path, http: httpx.AsyncClient, gate: Path
) -> None:
    state, port, temporal_port = tmp_path / "state", free_port(), free_port()
    dev = start_dev(tmp_path, state, port, temporal_port)
    mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
    with anyio.fail_after(30):
        while True:
            try:
                finished = await mcp.start("double", {"x": 9})
                break
            except httpx.TransportError:  # the banner is printed just before uvicorn binds
                await anyio.sleep(0.1)
    await mcp.wait_for(finished["taskId"])
    running = await mcp.start("gated", {"gate": str(gate)})
    await mcp.wait_for(running["taskId"], lambda t: t.get("statusMessage") is not None)

    dev.stop(signal.SIGINT, timeout=30)
    assert dev.popen.returncode == 0, dev.log()
    assert "stopping" in dev.log()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", temporal_port)) != 0, "the embedded Temporal server must be gone too"
    assert (state / "temporal.db").exists()

    dev = start_dev(tmp_path, state, port, temporal_port)
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    done = (await mcp.get(finished["taskId"])).result
                    break
                except httpx.TransportError:
                    await anyio.sleep(0.1)
        assert done["status"] == "completed" and done["result"]["structuredContent"] == {"value": 18}
        (gate / "release").write_text("1")
        resumed: dict[str, Any] = await mcp.wait_for(running["taskId"], timeout=60)
        assert resumed["status"] == "completed"
    finally:
        dev.stop(signal.SIGINT, timeout=30)
