"""docs/workflows.md's pipeline, written from that page alone, against kill -9 and `tasks/cancel`.

Its activities never heartbeat themselves; the worker heartbeats for them and
the workflow starts them with a `heartbeat_timeout`, as the page teaches. A
step interrupted by a crash is retried after the heartbeat timeout (seconds),
not after its two-hour `start_to_close_timeout`, and a cancel reaches it. The kill -9
is of `worker` processes; the rest runs on the module's workers in the test process.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_temporal.temporal import heartbeats
from tests.conftest import OpenFront, Stack
from tests.processes import start_worker
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

APP = "tests.docs_release_app:app"
HEARTBEAT_S = 1
"""The silent step's heartbeat timeout: it must outlive several of them, and a kill must cost about one."""


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    folder = tmp_path / f"effects-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def app_spec() -> str:
    return APP


def attempts(effects: Path) -> list[str]:
    marks = effects / "ran-build"
    return marks.read_text().split() if marks.exists() else []


async def until(predicate: Any, *, timeout: float) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.05)


async def stays(predicate: Any, *, for_s: float) -> None:
    """`predicate` holds all along for `for_s` seconds: fails at the first moment it does not."""
    deadline = time.monotonic() + for_s
    while time.monotonic() < deadline:
        assert predicate()
        await anyio.sleep(0.05)


async def test_a_silent_step_lives_past_its_heartbeat_timeout_and_resumes_within_seconds_of_kill_9(
    stack_factory: Callable[[], Stack], open_front: OpenFront, effects: Path
) -> None:
    # `worker` processes on a queue of their own, the first one killed; the front in this process.
    pipeline = stack_factory()
    pipeline.workers.append(start_worker(pipeline.workdir, pipeline.temporal, pipeline.task_queue, app=APP))
    front = await open_front(task_queue=pipeline.task_queue)
    async with front.http() as http:
        await _resumes_within_seconds_of_kill_9(pipeline, front.calls(http), effects)


async def _resumes_within_seconds_of_kill_9(pipeline: Stack, calls: TaskCalls, effects: Path) -> None:
    created = await calls.start("release", {"ref": "v1", "effects": str(effects), "heartbeat_s": HEARTBEAT_S})
    await until(lambda: attempts(effects) == ["1"], timeout=30)
    # The step never heartbeats itself: only the worker's heartbeats keep it from timing out meanwhile.
    await stays(lambda: attempts(effects) == ["1"], for_s=2 * HEARTBEAT_S)
    # The next worker polls already, so the retry waits for the missed heartbeat alone.
    pipeline.workers.append(start_worker(pipeline.workdir, pipeline.temporal, pipeline.task_queue, app=APP))
    pipeline.workers[0].kill()
    killed_at = time.monotonic()
    # Bounded far below the step's start_to_close_timeout: without heartbeat_timeout this waits two hours.
    await until(lambda: len(attempts(effects)) == 2, timeout=HEARTBEAT_S + 10)
    resumed_s = time.monotonic() - killed_at
    print(f"step retried {resumed_s:.1f} s after kill -9 (heartbeat_timeout {HEARTBEAT_S} s)")
    (effects / "release-build").write_text("1")
    done = await calls.wait_for(created["taskId"], timeout=30)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "v1.tar.gz deployed"


async def test_cancel_reaches_a_running_step(front_mcp: TaskCalls, effects: Path) -> None:
    calls = front_mcp
    created = await calls.start("release", {"ref": "v2", "effects": str(effects), "heartbeat_s": 10})
    await until(lambda: attempts(effects) == ["1"], timeout=30)
    cancelled_at = time.monotonic()
    assert "error" not in (await calls.cancel(created["taskId"])).body
    # Well inside the 10 s heartbeat timeout: the cancel came with the answer to a worker's heartbeat,
    # not with the SDK's own stop of an attempt whose heartbeats ran out.
    await until((effects / "cancelled-build").exists, timeout=5)
    print(f"the step saw the cancel {time.monotonic() - cancelled_at:.2f} s after tasks/cancel")
    assert attempts(effects) == ["1"]
    assert (await calls.wait_for(created["taskId"]))["status"] == "cancelled"


async def test_a_step_without_heartbeat_timeout_is_warned_about_once(
    front_mcp: TaskCalls, effects: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once per process, as a fresh `worker` process starts: nothing this process warned about before counts.
    monkeypatch.setattr(heartbeats, "_warned", set[tuple[str, str]]())
    with caplog.at_level(logging.WARNING, logger="temporalio.workflow"):
        for ref in ("v3", "v4"):
            await front_mcp.start("release", {"ref": ref, "effects": str(effects), "heartbeat_s": 0})
        await until(lambda: len(attempts(effects)) == 2, timeout=30)
    warnings = [r.getMessage() for r in caplog.records if "without heartbeat_timeout" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    assert "ReleaseWorkflow starts activity build" in warnings[0]
    (effects / "release-build").write_text("1")
