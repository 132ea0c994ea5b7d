"""A rolling deploy under worker versioning: tasks begun on build A end on A while new tasks run on build B.

Workers and the front in the test process, on the session's dev server, as `worker` and `serve`
run them: worker A (release 1) is made current, as `--make-current` does; a task of a pinned tool
and a workflow tool wait for answers on it; worker B (release 2) starts and an operator makes it
current (`admin set-current`, run in this process). New tasks then run on B, the waiting tasks are
answered after the deploy and finish with release 1's code, `admin tasks` shows each task's build,
and A holds no open task once they are done, so it can stop.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import VersioningBehavior

from mcp_tasks_temporal import TasksExtension
from mcp_tasks_temporal.ops.cli import Invocation, parse
from mcp_tasks_temporal.ops.deployment_admin import build_line
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.deployment import VERSION_SEARCH_ATTRIBUTE, Deployment, set_current
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.app_workers import app_worker, new_task_queue
from tests.front_app import InProcessFront, fresh_app, in_process_front
from tests.rolling_workflows import ReleaseGateV1, ReleaseGateV2
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}
SHIP = {"action": "accept", "content": {"ship": True}}


@dataclass
class Rollout:
    temporal: str
    task_queue: str
    deployment: str
    front: InProcessFront
    workers: AsyncExitStack

    def build(self, build_id: str) -> str:
        return f"{self.deployment}:{build_id}"

    async def start_worker(self, release: str, build_id: str, *, make_current: bool = False) -> AsyncExitStack:
        """A worker of `tests.rolling_app:v{release}` as build `build_id`, until the rollout ends or it is closed."""
        # A client of its own: two workers of one task queue may not share one.
        client = await connect_temporal(self.temporal)
        version = Deployment(self.deployment, build_id)
        worker = AsyncExitStack()
        await worker.enter_async_context(
            app_worker(
                client, fresh_app(f"tests.rolling_app:v{release}"), task_queue=self.task_queue, deployment=version
            )
        )
        self.workers.push_async_callback(worker.aclose)
        if make_current:
            await set_current(client, version)
        return worker


@pytest.fixture
async def rollout(temporal: str, app_client: Client) -> AsyncIterator[Rollout]:
    # The front is the newer release: it knows every tool, whichever build runs it.
    queue, deployment = new_task_queue("rolling"), f"rolling-{uuid.uuid4().hex[:8]}"
    async with (
        in_process_front(fresh_app("tests.rolling_app:v2"), app_client, task_queue=queue) as front,
        AsyncExitStack() as workers,
    ):
        yield Rollout(temporal, queue, deployment, front, workers)


async def _operator(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """An operator command (`admin ...`) in this process: its exit status and stdout."""
    parsed = parse(list(argv))
    assert isinstance(parsed, Invocation), parsed
    capsys.readouterr()
    status = await parsed.job()
    return status or 0, capsys.readouterr().out


async def _waiting(mcp: TaskCalls, tool: str) -> str:
    task_id = (await mcp.start(tool, {}, capabilities=ELICIT))["taskId"]
    await mcp.wait_for(task_id, {"input_required"}, timeout=30)
    return task_id


async def _build_of(client: Client, task_id: str) -> str | None:
    info = (await client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()).raw_description
    version = info.workflow_execution_info.versioning_info.deployment_version
    return f"{version.deployment_name}:{version.build_id}" if version.build_id else None


async def test_tasks_begun_on_build_a_end_on_a_while_new_ones_run_on_b(
    rollout: Rollout, temporal_client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    worker_a = await rollout.start_worker("1", "a", make_current=True)
    async with rollout.front.http() as http:
        mcp = rollout.front.calls(http)
        pinned_tool = await _waiting(mcp, "ask")
        workflow_tool = await _waiting(mcp, "gate")
        moving_tool = await _waiting(mcp, "ask_moving")
        for task_id in (pinned_tool, workflow_tool, moving_tool):
            assert await _build_of(temporal_client, task_id) == rollout.build("a")

        await rollout.start_worker("2", "b")
        # B polls, but A is still current until the operator says otherwise.
        before_switch = await _waiting(mcp, "ask")
        assert await _build_of(temporal_client, before_switch) == rollout.build("a")
        address = ["--address", rollout.temporal, "--namespace", "default"]
        status, _ = await _operator(
            capsys, "admin", "set-current", *address, "--deployment-name", rollout.deployment, "--build-id", "b"
        )
        assert status == 0

        # New tasks run release 2's code: its workflow asks a question release 1 never asked.
        new_gate = await _waiting(mcp, "gate")
        assert set((await mcp.get(new_gate)).result["inputRequests"]) == {"really"}
        new_tool = await _waiting(mcp, "ask")
        assert await _build_of(temporal_client, new_tool) == rollout.build("b")
        await mcp.update(new_tool, {"ship": SHIP})
        done = await mcp.wait_for(new_tool, timeout=30)
        assert done["result"]["structuredContent"] == {"release": "2", "action": "accept"}

        # The tasks begun on A are answered after the deploy and finish with release 1's code, on A.
        assert set((await mcp.get(workflow_tool)).result["inputRequests"]) == {"ship"}
        # An auto-upgrade task moves to B at its next step; the tool attempt already running on A finishes there.
        await mcp.update(moving_tool, {"ship": SHIP})
        done = await mcp.wait_for(moving_tool, timeout=30)
        assert done["result"]["structuredContent"] == {"release": "1", "action": "accept"}, done
        assert await _build_of(temporal_client, moving_tool) == rollout.build("b")

        begun_on_a = (pinned_tool, workflow_tool, before_switch)
        for task_id in begun_on_a:
            await mcp.update(task_id, {"ship": SHIP})
        for task_id in begun_on_a:
            done = await mcp.wait_for(task_id, timeout=30)
            assert done["status"] == "completed", done
            assert done["result"]["structuredContent"] == {"release": "1", "action": "accept"}, done
            assert await _build_of(temporal_client, task_id) == rollout.build("a")

        status, out = await _operator(capsys, "admin", "tasks", *address, "--json")
        assert status == 0
        builds = {task["taskId"]: task["build"] for task in json.loads(out)["tasks"]}
        assert [builds[task_id] for task_id in begun_on_a] == [rollout.build("a")] * 3
        assert builds[new_tool] == rollout.build("b")

        status, out = await _operator(
            capsys, "admin", "deployment", *address, "--deployment-name", rollout.deployment, "--json"
        )
        assert status == 0
        described = json.loads(out)
        assert described["current"] == rollout.build("b")
        assert {b["build"]: b["status"] for b in described["builds"]}[rollout.build("a")] in ("draining", "drained")

        _, text = await _operator(capsys, "admin", "deployment", *address, "--deployment-name", rollout.deployment)
        assert f"current {rollout.build('b')}" in text.splitlines()[0]
        _, text = await _operator(capsys, "admin", "tasks", *address, "--tool", "gate")
        rows = {line.split()[0]: line.split()[-1] for line in text.splitlines()[1:]}
        assert (rows[workflow_tool], rows[new_gate]) == (rollout.build("a"), rollout.build("b"))

        # A build none of whose workers ever polled is refused, not made current.
        refused = ["--deployment-name", rollout.deployment, "--build-id", "never-started", "--wait", "1"]
        assert (await _operator(capsys, "admin", "set-current", *address, *refused))[0] == 2
        unknown = ["--deployment-name", f"{rollout.deployment}-unknown"]
        assert (await _operator(capsys, "admin", "deployment", *address, *unknown))[0] == 2

    # Drained: nothing open is pinned to A any more (visibility, as Temporal's own drainage check reads it).
    query = (
        f"TaskQueue = '{rollout.task_queue}' AND ExecutionStatus = 'Running' "
        f"AND {VERSION_SEARCH_ATTRIBUTE} = '{rollout.build('a')}'"
    )
    with anyio.fail_after(30):
        while (await temporal_client.count_workflows(query)).count:
            await anyio.sleep(0.2)
    await worker_a.aclose()  # stops as it ran: without an error


# -- how tools declare their versioning (no processes) ---------------------------------------


@workflow.defn(name="DeclaresAutoUpgrade", versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class _DeclaresAutoUpgrade:
    @workflow.run
    async def run(self) -> None:
        return None


def test_tool_tasks_auto_upgrade_and_workflow_tools_pin_unless_told_otherwise() -> None:
    tasks = TasksExtension()
    tasks.enable("plain")
    tasks.tool(name="kept", versioning="pinned")(lambda: None)
    plain, kept = tasks.options_for("plain"), tasks.options_for("kept")
    assert plain is not None and kept is not None
    assert (plain.versioning, kept.versioning) == ("auto-upgrade", "pinned")

    tasks.workflow_tool(ReleaseGateV1, name="gate")
    tasks.workflow_tool(ReleaseGateV2, name="moving_gate", versioning="auto-upgrade")
    tasks.workflow_tool(_DeclaresAutoUpgrade, name="declared")
    tools = tasks.workflow_tools
    assert (tools["gate"].versioning, tools["gate"].declares_versioning) == ("pinned", False)
    # Said at the start of each task, since the class says nothing (a versioned worker would pin it).
    assert (tools["moving_gate"].versioning, tools["moving_gate"].declares_versioning) == ("auto-upgrade", False)
    assert (tools["declared"].versioning, tools["declared"].declares_versioning) == ("auto-upgrade", True)


def test_a_versioning_that_contradicts_the_class_or_is_unknown_is_refused() -> None:
    tasks = TasksExtension()
    with pytest.raises(ValueError, match="contradicts"):
        tasks.workflow_tool(_DeclaresAutoUpgrade, name="declared", versioning="pinned")
    with pytest.raises(ValueError, match="versioning must be one of"):
        tasks.tool(name="odd", versioning="sometimes")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="go together"):
        Deployment.from_args("tasks", None)
    with pytest.raises(ValueError, match="may not contain"):
        Deployment.from_args("tasks.v2", "b")


def test_admin_deployment_says_a_builds_drainage_once() -> None:
    draining = {"build": "app:a", "status": "draining", "drainage": "draining", "createdAt": "2026-12-04T10:00:00Z"}
    assert build_line(draining) == "  app:a  draining  since 2026-12-04T10:00:00Z"
    # Where the drainage adds to the status (an inactive build's pinned tasks drained), it is said.
    inactive = {**draining, "status": "inactive", "drainage": "drained"}
    assert build_line(inactive) == "  app:a  inactive (drained)  since 2026-12-04T10:00:00Z"
    assert "(" not in build_line({**draining, "status": "current", "drainage": None})
