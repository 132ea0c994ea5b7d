"""A task whose workflow code keeps failing says so in `tasks/get`, refuses answers, and resumes once fixed.

Temporal keeps such a run open and retries its workflow task; the memo cannot change (only the
failing code could change it), so the front reads the failure from describe and the history.
The worker that meets the failure counts it on its own metrics endpoint, read or not, and ends
the task `failed` when the app's `FailingWorkflowPolicy` says so.
Each test runs docs/workflows.md's own pipeline with one careless edit, then the page's code.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.api.enums.v1 import WorkflowTaskFailedCause
from temporalio.client import Client

from mcp_tasks_temporal.temporal.workflow_task_failures import describe_failure
from tests.docs_pipeline import APP, clock_read, deploy_first, docs_pipeline, planted_bug
from tests.processes import CLI, REPO_ROOT, Process, child_env, free_port, start_front, start_worker, wait_until
from tests.test_observability import find, scrape
from tests.test_push import http_listen, listen_message
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}
APPROVE = {"action": "accept", "content": {"approve": True}}
VISIBLE_WITHIN_S = 10


async def until_failing(mcp: TaskCalls, task_id: str, started: float) -> tuple[dict[str, Any], float]:
    """The task once its statusMessage says its workflow is failing; seconds since `started`."""
    with anyio.fail_after(VISIBLE_WITHIN_S):
        while True:
            task = (await mcp.get(task_id)).result
            if "Workflow failing" in (task.get("statusMessage") or ""):
                return task, time.monotonic() - started
            await anyio.sleep(0.1)


def stop_all(*processes: Process) -> None:
    for process in processes:
        process.stop()


def counted(samples: dict[str, float], name: str, **labels: str) -> float:
    """The series' value, 0 while the worker has not counted any (a counter appears at its first count)."""
    present = [s for s in samples if s.split("{")[0] == name and all(f'{k}="{v}"' in s for k, v in labels.items())]
    return find(samples, name, **labels) if present else 0.0


async def until_counted(http: httpx.AsyncClient, port: int, name: str, **labels: str) -> dict[str, float]:
    """The worker's metrics once `name` with `labels` has been counted."""
    with anyio.fail_after(VISIBLE_WITHIN_S):
        while True:
            samples = await scrape(http, port)
            if counted(samples, name, **labels):
                return samples
            await anyio.sleep(0.1)


async def until_attempt(client: Client, task_id: str, attempt: int) -> None:
    """Until Temporal retries the task's failing workflow task for the `attempt`th time (about 10 s apart)."""
    handle = client.get_workflow_handle(f"mcp-task/anonymous/{task_id}")
    with anyio.fail_after(90):
        while (await handle.describe()).raw_description.pending_workflow_task.attempt < attempt:
            await anyio.sleep(0.5)


async def pushed_until_closed(url: str, http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    """The task as `subscriptions/listen` pushes it when it reaches a terminal status."""
    async with http_listen(url, http, listen_message([task_id])) as frames:
        assert (await anext(frames))["method"] == "notifications/subscriptions/acknowledged"
        with anyio.fail_after(60):
            while True:
                pushed = (await anext(frames))["params"]
                if pushed["status"] in ("completed", "failed", "cancelled"):
                    return pushed


BROKEN: dict[str, Callable[[str], str]] = {"exception": planted_bug, "sandbox": clock_read}
"""A careless edit of the page's workflow, by the kind of failure it makes."""


@pytest.mark.parametrize("broken_by", sorted(BROKEN))
async def test_a_failing_workflow_is_counted_on_its_worker_when_it_fails_once_with_no_read(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path, temporal_client: Client, broken_by: str
) -> None:
    variant, kind = BROKEN[broken_by], broken_by
    broken = docs_pipeline(tmp_path / "broken", variant)
    queue = f"failing-{uuid.uuid4()}"
    metrics_port = free_port()
    worker = start_worker(workdir, temporal, queue, app=APP, env=broken, extra=["--metrics-port", str(metrics_port)])
    front, url = start_front(workdir, temporal, queue, app=APP, env=broken)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        started = time.monotonic()
        task_id = (await mcp.start("release", {"ref": "v4"}, capabilities=ELICIT))["taskId"]
        # Nobody reads the task: its worker counts the failure as it happens.
        samples = await until_counted(http, metrics_port, "mcp_failing_workflows_total", tool="release", kind=kind)
        print(f"{kind}: counted on the worker {time.monotonic() - started:.2f} s after the call")
        assert find(samples, "mcp_failing_workflows_total", tool="release", kind=kind) == 1
        assert f"task {task_id} (release): workflow failing" in worker.log()

        await until_attempt(temporal_client, task_id, 3)  # Temporal retried it: still one failing workflow
        samples = await scrape(http, metrics_port)
        assert find(samples, "mcp_failing_workflows_total", tool="release", kind=kind) == 1
        assert counted(samples, "mcp_failing_workflows_ended_total", tool="release") == 0, "no policy: it waits"
        assert worker.log().count("(release): workflow failing") == 1, worker.log()
        task = (await mcp.get(task_id)).result
        assert task["status"] == "working" and "Workflow failing" in task["statusMessage"], task
    finally:
        stop_all(front, worker)


@pytest.mark.parametrize("broken_by", sorted(BROKEN))
async def test_the_failing_workflow_policy_ends_the_task_failed_with_the_error(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path, broken_by: str
) -> None:
    variant, kind = BROKEN[broken_by], broken_by
    broken = docs_pipeline(tmp_path / "broken", variant, failing_workflow="FailingWorkflowPolicy(max_attempts=2)")
    queue = f"failing-{uuid.uuid4()}"
    metrics_port = free_port()
    worker = start_worker(workdir, temporal, queue, app=APP, env=broken, extra=["--metrics-port", str(metrics_port)])
    front, url = start_front(workdir, temporal, queue, app=APP, env=broken)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        started = time.monotonic()
        task_id = (await mcp.start("release", {"ref": "v5"}, capabilities=ELICIT))["taskId"]
        pushed = await pushed_until_closed(url, http, task_id)
        print(f"{kind}: ended failed {time.monotonic() - started:.2f} s after the call")
        task = await mcp.wait_for(task_id, ["failed"], timeout=10)
        error = task["error"]
        assert error["code"] == -32603, error
        assert error["data"]["failing"]["kind"] == kind and error["data"]["failing"]["attempts"] == 2, error
        assert "Traceback" not in error["message"] and "no such field" not in error["message"], error
        assert pushed["status"] == "failed" and pushed["error"] == error, "push carries what tasks/get says"
        samples = await scrape(http, metrics_port)
        assert find(samples, "mcp_failing_workflows_ended_total", tool="release", kind=kind) == 1
        assert find(samples, "mcp_failing_workflows_total", tool="release", kind=kind) == 1
        assert "ended failed" in worker.log()
    finally:
        stop_all(front, worker)


async def test_a_code_change_under_a_task_is_counted_where_it_fails_and_a_worker_with_a_policy_ends_it(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    fixed = docs_pipeline(tmp_path / "fixed")
    changed = docs_pipeline(tmp_path / "changed", deploy_first)
    changed_ending = docs_pipeline(
        tmp_path / "changed-ending", deploy_first, failing_workflow="FailingWorkflowPolicy(max_failing_s=8)"
    )
    queue = f"failing-{uuid.uuid4()}"
    worker = start_worker(workdir, temporal, queue, app=APP, env=fixed)
    front, url = start_front(workdir, temporal, queue, app=APP, env=fixed)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        task_id = (await mcp.start("release", {"ref": "v6"}, capabilities=ELICIT))["taskId"]
        await mcp.wait_for(task_id, ["input_required"], timeout=60)
        worker.stop()
        metrics_port = free_port()
        worker = start_worker(
            workdir, temporal, queue, app=APP, env=changed, extra=["--metrics-port", str(metrics_port)]
        )
        # The answer is what makes the changed code replay the history and diverge from it.
        await mcp.update(task_id, {"approve": APPROVE})
        await until_counted(http, metrics_port, "mcp_failing_workflows_total", tool="release", kind="nondeterminism")
        task = (await mcp.get(task_id)).result
        assert task["status"] == "input_required" and "code changed under a running task" in task["statusMessage"]

        worker.stop()
        metrics_port = free_port()
        worker = start_worker(
            workdir, temporal, queue, app=APP, env=changed_ending, extra=["--metrics-port", str(metrics_port)]
        )
        task = await mcp.wait_for(task_id, ["failed"], timeout=60)
        failing = task["error"]["data"]["failing"]
        assert task["error"]["code"] == -32603 and failing["kind"] == "nondeterminism", task
        assert failing["failingSeconds"] >= 8, task
        samples = await scrape(http, metrics_port)
        assert find(samples, "mcp_failing_workflows_ended_total", tool="release", kind="nondeterminism") == 1
        # Another worker reported the series' first failure, and counted it: this one does not again.
        assert counted(samples, "mcp_failing_workflows_total", tool="release") == 0
    finally:
        stop_all(front, worker)


async def test_a_sandbox_violation_shows_in_get_within_seconds_and_fixed_code_resumes_the_task(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    broken = docs_pipeline(tmp_path / "broken", clock_read)
    fixed = docs_pipeline(tmp_path / "fixed")
    queue = f"failing-{uuid.uuid4()}"
    metrics_port = free_port()
    worker = start_worker(workdir, temporal, queue, app=APP, env=broken, extra=["--metrics-port", str(metrics_port)])
    front, url = start_front(workdir, temporal, queue, app=APP, env=fixed)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        started = time.monotonic()
        task_id = (await mcp.start("release", {"ref": "v1"}, capabilities=ELICIT))["taskId"]
        task, seconds = await until_failing(mcp, task_id, started)
        print(f"workflow failure visible in tasks/get {seconds:.2f} s after the call")
        message = task["statusMessage"]
        assert task["status"] == "working"
        assert "RestrictedWorkflowAccessError" in message and "datetime.now" in message, message
        assert "\n" not in message and "Traceback" not in message and 'File "' not in message

        async with http_listen(url, http, listen_message([task_id])) as frames:
            assert (await anext(frames))["method"] == "notifications/subscriptions/acknowledged"
            with anyio.fail_after(VISIBLE_WITHIN_S):
                pushed = (await anext(frames))["params"]
            assert pushed["statusMessage"] == message, "push carries what tasks/get says"

        for _ in range(3):  # counted once per failure, by its worker, however often it is read
            assert "Workflow failing" in (await mcp.get(task_id)).result["statusMessage"]
        samples = await scrape(http, metrics_port)
        assert find(samples, "mcp_failing_workflows_total", tool="release", kind="sandbox") == 1
        assert front.log().count("workflow failing") == 1, front.log()
        with anyio.fail_after(60):
            admin = await anyio.run_process(
                [sys.executable, "-m", "mcp_tasks_temporal", "admin", "tasks", "--tool", "release", "--json"]
                + ["--temporal", temporal],
                cwd=REPO_ROOT,
                env={**child_env(), **fixed},
            )
        [listed] = [t for t in json.loads(admin.stdout)["tasks"] if t["taskId"] == task_id]
        assert "RestrictedWorkflowAccessError" in listed["failing"], listed

        worker.stop()
        worker = start_worker(workdir, temporal, queue, app=APP, env=fixed)
        asking = await mcp.wait_for(task_id, ["input_required"], timeout=60)
        assert asking["statusMessage"] != message
        assert (await mcp.update(task_id, {"approve": APPROVE})).result is not None
        done = await mcp.wait_for(task_id, timeout=60)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "v1.tar.gz deployed"
    finally:
        stop_all(front, worker)


async def test_an_answer_to_a_task_whose_code_changed_under_it_is_refused_and_named(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    fixed = docs_pipeline(tmp_path / "fixed")
    changed = docs_pipeline(tmp_path / "changed", deploy_first)
    queue = f"failing-{uuid.uuid4()}"
    worker = start_worker(workdir, temporal, queue, app=APP, env=fixed)
    front, url = start_front(workdir, temporal, queue, app=APP, env=fixed)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        task_id = (await mcp.start("release", {"ref": "v2"}, capabilities=ELICIT))["taskId"]
        await mcp.wait_for(task_id, ["input_required"], timeout=60)
        worker.stop()
        worker = start_worker(workdir, temporal, queue, app=APP, env=changed)

        started = time.monotonic()
        refused = await mcp.update(task_id, {"approve": APPROVE})
        # Delivered, then the workflow failed on it: it takes effect once fixed code runs.
        assert refused.error["code"] == -32603 and refused.error["data"] == {"recorded": True}, refused.body
        task, seconds = await until_failing(mcp, task_id, started)
        print(f"non-determinism visible {seconds:.2f} s after the answer")
        assert task["status"] == "input_required"
        assert "code changed under a running task" in task["statusMessage"], task["statusMessage"]
        assert "\n" not in task["statusMessage"]
        again = await mcp.update(task_id, {"approve": APPROVE})
        assert again.error["code"] == -32603 and again.error["data"] == {"recorded": False}, again.body

        worker.stop()
        worker = start_worker(workdir, temporal, queue, app=APP, env=fixed)
        done = await mcp.wait_for(task_id, timeout=60)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "v2.tar.gz deployed"
    finally:
        stop_all(front, worker)


async def test_devs_console_says_once_that_a_tasks_workflow_is_failing(tmp_path: Path, http: httpx.AsyncClient) -> None:
    broken = docs_pipeline(tmp_path / "broken", clock_read)
    port = free_port()
    command = [*CLI, "dev", "--app", APP, "--state-dir", str(tmp_path / "state"), "--port", str(port)]
    command += ["--temporal-port", str(free_port()), "--ui-port", "0"]
    dev = Process(f"dev-{port}", command, tmp_path / f"dev-{port}.log", env=broken).start()
    try:
        wait_until(lambda: "Press Ctrl-C to stop." in dev.log() or not dev.alive, timeout=60, what="dev")
        mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
        started = time.monotonic()
        task_id = (await mcp.start("release", {"ref": "v3"}, capabilities=ELICIT))["taskId"]
        # Nobody reads the task: dev's console says it by itself.
        with anyio.fail_after(VISIBLE_WITHIN_S):
            while f"task {task_id} (release): workflow failing" not in dev.log():
                await anyio.sleep(0.1)
        print(f"dev's console named the failure {time.monotonic() - started:.2f} s after the call")
        [line] = [line for line in dev.log().splitlines() if "workflow failing" in line]
        assert "RestrictedWorkflowAccessError" in line, line
        assert "Workflow failing" in (await mcp.get(task_id)).result["statusMessage"]
        await anyio.sleep(2.5)  # another round of dev's look at running tasks
        assert dev.log().count("workflow failing") == 1, dev.log()
    finally:
        dev.stop(timeout=30)


def test_the_cause_names_the_failure_and_never_an_exceptions_own_message() -> None:
    nondeterminism = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
    unhandled = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE
    kind, cause = describe_failure(
        nondeterminism, "", "[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'a' does not match 'b'"
    )
    assert kind == "nondeterminism" and cause.endswith("(Activity type of scheduled event 'a' does not match 'b')")
    kind, cause = describe_failure(unhandled, "KeyError", "'api_key=s3cr3t'")
    assert kind == "exception" and cause.startswith("KeyError raised in workflow code") and "s3cr3t" not in cause
    long = "Cannot access os.environ from inside a workflow. " + "x" * 1000
    kind, cause = describe_failure(unhandled, "RestrictedWorkflowAccessError", long)
    assert (
        kind == "sandbox" and cause == "RestrictedWorkflowAccessError: Cannot access os.environ from inside a workflow"
    )
