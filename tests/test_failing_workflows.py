"""A task whose workflow code keeps failing says so in `tasks/get`, refuses answers, and resumes once fixed.

Temporal keeps such a run open and retries its workflow task; the memo cannot change (only the
failing code could change it), so the front reads the failure from describe and the history.
The worker that meets the failure counts it on its own metrics endpoint, read or not, and ends
the task `failed` when the app's `FailingWorkflowPolicy` says so.
Each test runs docs/workflows.md's own pipeline with one careless edit, then the page's code: each
version a package of its own in this process, its workers in this process as `worker` processes
would run them (an identity and a metrics endpoint of their own), the front beside them. `dev`'s
console is a process.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.api.enums.v1 import WorkflowTaskFailedCause
from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from mcp_tasks_temporal.temporal.connection import data_converter
from mcp_tasks_temporal.temporal.workflow_task_failures import describe_failure
from tests.app_workers import app_worker, new_task_queue
from tests.cli_runs import run_in_process
from tests.docs_pipeline import APP, clock_read, deploy_first, docs_pipeline, planted_bug
from tests.front_app import InProcessFront, fresh_app, in_process_front
from tests.processes import CLI, Process, child_env, free_port, wait_until
from tests.test_observability import find, scrape
from tests.test_push import http_listen, listen_message
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}
APPROVE = {"action": "accept", "content": {"approve": True}}
MAX_FAILING_S = 2
"""The ending worker's bound on how long a task may fail: Temporal's clock, which no test skips, so kept short."""
VISIBLE_WITHIN_S = 10
WORKER_LOG = "mcp_tasks_temporal.temporal.failure_watch"
FRONT_LOG = "mcp_tasks_temporal.front.gateway.operations"


class Pipelines:
    """The page's pipeline, as variants of it, each a package of its own on this process's path."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self._folder = folder
        self._monkeypatch = monkeypatch

    def app(self, change_workflow: Callable[[str], str] | None = None, **options: Any) -> str:
        """A variant (`docs_pipeline`'s arguments); its app's `MODULE:ATTR`."""
        package = f"myteam_{uuid.uuid4().hex[:8]}"
        docs_pipeline(self._folder / package, change_workflow, package=package, **options)
        self._monkeypatch.syspath_prepend(str(self._folder / package))  # pyright: ignore[reportUnknownMemberType]
        return f"{package}.server:app"


@pytest.fixture
def pipelines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Pipelines:
    return Pipelines(tmp_path, monkeypatch)


@pytest.fixture
async def http() -> AsyncGenerator[httpx.AsyncClient]:
    """For the workers' metrics endpoints, in this process."""
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


@asynccontextmanager
async def worker_of(temporal: str, spec: str, queue: str, *, metrics_port: int | None = None) -> AsyncGenerator[None]:
    """`spec`'s workers in this process, as a `worker` process of their own runs them: an identity of their own
    (the worker that reports a series' first failure counts it), and with `metrics_port` their own Prometheus
    endpoint (`--metrics-port`)."""
    runtime = None
    if metrics_port is not None:
        prometheus = PrometheusConfig(f"127.0.0.1:{metrics_port}", counters_total_suffix=True)
        runtime = Runtime(telemetry=TelemetryConfig(metrics=prometheus))
    identity = f"worker-{uuid.uuid4().hex[:8]}@tests"
    client = await Client.connect(temporal, identity=identity, runtime=runtime, data_converter=data_converter())
    async with app_worker(client, fresh_app(spec), task_queue=queue):
        yield


@asynccontextmanager
async def front_of(client: Client, spec: str, queue: str) -> AsyncGenerator[tuple[InProcessFront, TaskCalls]]:
    async with in_process_front(fresh_app(spec), client, task_queue=queue) as front, front.http() as http:
        yield front, front.calls(http)


def said(caplog: pytest.LogCaptureFixture, logger: str, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and text in r.getMessage()]


async def until_failing(mcp: TaskCalls, task_id: str, started: float) -> tuple[dict[str, Any], float]:
    """The task once its statusMessage says its workflow is failing; seconds since `started`."""
    with anyio.fail_after(VISIBLE_WITHIN_S):
        while True:
            task = (await mcp.get(task_id)).result
            if "Workflow failing" in (task.get("statusMessage") or ""):
                return task, time.monotonic() - started
            await anyio.sleep(0.1)


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


async def pushed_until_closed(front: InProcessFront, task_id: str) -> dict[str, Any]:
    """The task as `subscriptions/listen` pushes it when it reaches a terminal status."""
    async with front.http() as http, http_listen(front.url, http, listen_message([task_id])) as frames:
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
    temporal: str,
    app_client: Client,
    temporal_client: Client,
    pipelines: Pipelines,
    http: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    broken_by: str,
) -> None:
    variant, kind = BROKEN[broken_by], broken_by
    broken = pipelines.app(variant)
    queue = new_task_queue("failing")
    metrics_port = free_port()
    worker = worker_of(temporal, broken, queue, metrics_port=metrics_port)
    async with worker, front_of(app_client, broken, queue) as (_, mcp):
        started = time.monotonic()
        task_id = (await mcp.start("release", {"ref": "v4"}, capabilities=ELICIT))["taskId"]
        # Nobody reads the task: its worker counts the failure as it happens.
        samples = await until_counted(http, metrics_port, "mcp_failing_workflows_total", tool="release", kind=kind)
        print(f"{kind}: counted on the worker {time.monotonic() - started:.2f} s after the call")
        assert find(samples, "mcp_failing_workflows_total", tool="release", kind=kind) == 1
        assert said(caplog, WORKER_LOG, f"task {task_id} (release): workflow failing")

        await until_attempt(temporal_client, task_id, 3)  # Temporal retried it: still one failing workflow
        samples = await scrape(http, metrics_port)
        assert find(samples, "mcp_failing_workflows_total", tool="release", kind=kind) == 1
        assert counted(samples, "mcp_failing_workflows_ended_total", tool="release") == 0, "no policy: it waits"
        assert len(said(caplog, WORKER_LOG, "(release): workflow failing")) == 1, caplog.text
        task = (await mcp.get(task_id)).result
        assert task["status"] == "working" and "Workflow failing" in task["statusMessage"], task


@pytest.mark.parametrize("broken_by", sorted(BROKEN))
async def test_the_failing_workflow_policy_ends_the_task_failed_with_the_error(
    temporal: str,
    app_client: Client,
    pipelines: Pipelines,
    http: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    broken_by: str,
) -> None:
    variant, kind = BROKEN[broken_by], broken_by
    broken = pipelines.app(variant, failing_workflow="FailingWorkflowPolicy(max_attempts=2)")
    queue = new_task_queue("failing")
    metrics_port = free_port()
    worker = worker_of(temporal, broken, queue, metrics_port=metrics_port)
    async with worker, front_of(app_client, broken, queue) as (front, mcp):
        started = time.monotonic()
        task_id = (await mcp.start("release", {"ref": "v5"}, capabilities=ELICIT))["taskId"]
        pushed = await pushed_until_closed(front, task_id)
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
        assert said(caplog, WORKER_LOG, "ended failed"), caplog.text


async def test_a_code_change_under_a_task_is_counted_where_it_fails_and_a_worker_with_a_policy_ends_it(
    temporal: str, app_client: Client, pipelines: Pipelines, http: httpx.AsyncClient
) -> None:
    fixed = pipelines.app()
    changed = pipelines.app(deploy_first)
    changed_ending = pipelines.app(
        deploy_first, failing_workflow=f"FailingWorkflowPolicy(max_failing_s={MAX_FAILING_S})"
    )
    queue = new_task_queue("failing")
    async with front_of(app_client, fixed, queue) as (_, mcp):
        async with worker_of(temporal, fixed, queue):
            task_id = (await mcp.start("release", {"ref": "v6"}, capabilities=ELICIT))["taskId"]
            await mcp.wait_for(task_id, ["input_required"], timeout=60)
        metrics_port = free_port()
        async with worker_of(temporal, changed, queue, metrics_port=metrics_port):
            # The answer is what makes the changed code replay the history and diverge from it.
            await mcp.update(task_id, {"approve": APPROVE})
            await until_counted(
                http, metrics_port, "mcp_failing_workflows_total", tool="release", kind="nondeterminism"
            )
            task = (await mcp.get(task_id)).result
            assert task["status"] == "input_required"
            assert "code changed under a running task" in task["statusMessage"]
        metrics_port = free_port()
        async with worker_of(temporal, changed_ending, queue, metrics_port=metrics_port):
            task = await mcp.wait_for(task_id, ["failed"], timeout=60)
            failing = task["error"]["data"]["failing"]
            assert task["error"]["code"] == -32603 and failing["kind"] == "nondeterminism", task
            assert failing["failingSeconds"] >= MAX_FAILING_S, task
            samples = await scrape(http, metrics_port)
            assert find(samples, "mcp_failing_workflows_ended_total", tool="release", kind="nondeterminism") == 1
            # Another worker reported the series' first failure, and counted it: this one does not again.
            assert counted(samples, "mcp_failing_workflows_total", tool="release") == 0


async def test_a_sandbox_violation_shows_in_get_within_seconds_and_fixed_code_resumes_the_task(
    temporal: str,
    app_client: Client,
    pipelines: Pipelines,
    http: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = pipelines.app(clock_read)
    fixed = pipelines.app()
    queue = new_task_queue("failing")
    metrics_port = free_port()
    async with front_of(app_client, fixed, queue) as (front, mcp):
        async with worker_of(temporal, broken, queue, metrics_port=metrics_port):
            started = time.monotonic()
            task_id = (await mcp.start("release", {"ref": "v1"}, capabilities=ELICIT))["taskId"]
            task, seconds = await until_failing(mcp, task_id, started)
            print(f"workflow failure visible in tasks/get {seconds:.2f} s after the call")
            message = task["statusMessage"]
            assert task["status"] == "working"
            assert "RestrictedWorkflowAccessError" in message and "datetime.now" in message, message
            assert "\n" not in message and "Traceback" not in message and 'File "' not in message

            async with (
                front.http() as listening,
                http_listen(front.url, listening, listen_message([task_id])) as frames,
            ):
                assert (await anext(frames))["method"] == "notifications/subscriptions/acknowledged"
                with anyio.fail_after(VISIBLE_WITHIN_S):
                    pushed = (await anext(frames))["params"]
                assert pushed["statusMessage"] == message, "push carries what tasks/get says"

            for _ in range(3):  # counted once per failure, by its worker, however often it is read
                assert "Workflow failing" in (await mcp.get(task_id)).result["statusMessage"]
            samples = await scrape(http, metrics_port)
            assert find(samples, "mcp_failing_workflows_total", tool="release", kind="sandbox") == 1
            assert len(said(caplog, FRONT_LOG, "workflow failing")) == 1, caplog.text
            admin = await run_in_process(
                ["admin", "tasks", "--tool", "release", "--json", "--temporal", temporal], stdin="", env=child_env()
            )
            assert admin.code == 0, admin.err
            [listed] = [t for t in admin.json()["tasks"] if t["taskId"] == task_id]
            assert "RestrictedWorkflowAccessError" in listed["failing"], listed

        async with worker_of(temporal, fixed, queue):
            asking = await mcp.wait_for(task_id, ["input_required"], timeout=60)
            assert asking["statusMessage"] != message
            assert (await mcp.update(task_id, {"approve": APPROVE})).result is not None
            done = await mcp.wait_for(task_id, timeout=60)
            assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "v1.tar.gz deployed"


async def test_an_answer_to_a_task_whose_code_changed_under_it_is_refused_and_named(
    temporal: str, app_client: Client, pipelines: Pipelines
) -> None:
    fixed = pipelines.app()
    changed = pipelines.app(deploy_first)
    queue = new_task_queue("failing")
    async with front_of(app_client, fixed, queue) as (_, mcp):
        async with worker_of(temporal, fixed, queue):
            task_id = (await mcp.start("release", {"ref": "v2"}, capabilities=ELICIT))["taskId"]
            await mcp.wait_for(task_id, ["input_required"], timeout=60)
        async with worker_of(temporal, changed, queue):
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
        async with worker_of(temporal, fixed, queue):
            done = await mcp.wait_for(task_id, timeout=60)
            assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "v2.tar.gz deployed"


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
        # Each read looks at the task as a round of dev's does (`failing`, logged at its first report only).
        for _ in range(3):
            assert "Workflow failing" in (await mcp.get(task_id)).result["statusMessage"]
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
