"""Tracing, metrics and health probes, observed from outside real front and worker processes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcp_tasks_temporal.temporal.contract import RUN_TOOL_ACTIVITY, TOOL_TASK_WORKFLOW
from mcp_tasks_temporal.temporal.tracing import tracing_requested
from tests.conftest import Stack
from tests.otlp_collector import Collector, Span, otlp_collector
from tests.processes import free_port, start_front, start_temporal, start_worker
from tests.test_dev import start_dev
from tests.test_push import http_listen, listen_message
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio


@pytest.fixture
def collector() -> Iterator[Collector]:
    with otlp_collector() as running:
        yield running


async def spans_until(
    collector: Collector, wanted: set[str], *, task_id: str, also: frozenset[str] = frozenset(), timeout: float = 30
) -> list[Span]:
    """Poll what the processes exported until every wanted span name of this task's trace has arrived, and a span
    of each name in `also` (requests of their own traces, such as the polls) tagged with the task."""
    with anyio.fail_after(timeout):
        while True:
            spans = collector.snapshot()
            root = [s for s in spans if s.name.startswith("tools/call") and s.attributes.get("mcp.task.id") == task_id]
            if root:
                names = {s.name for s in spans if s.trace_id == root[0].trace_id}
                tagged = {s.name for s in spans if s.attributes.get("mcp.task.id") == task_id}
                if wanted <= names and also <= tagged:
                    return spans
            await anyio.sleep(0.1)


async def test_one_trace_from_tools_call_through_workflow_activity_and_tool(
    workdir: Path, temporal: str, collector: Collector, http: httpx.AsyncClient
) -> None:
    # Only the standard variables: an OTLP endpoint switches tracing on.
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    stack = Stack(workdir, temporal, task_queue=f"traced-{uuid.uuid4()}")
    try:
        stack.workers.append(start_worker(workdir, temporal, stack.task_queue, env=env))
        stack.fronts.append(start_front(workdir, temporal, stack.task_queue, env=env))
        mcp = TaskCalls(HttpMcp(stack.url, http))
        task_id = (await mcp.start("double", {"x": 4}))["taskId"]
        assert (await mcp.wait_for(task_id))["status"] == "completed"
        wanted = {
            "tools/call double",
            f"StartWorkflow:{TOOL_TASK_WORKFLOW}",
            f"RunWorkflow:{TOOL_TASK_WORKFLOW}",
            f"StartActivity:{RUN_TOOL_ACTIVITY}",
            f"RunActivity:{RUN_TOOL_ACTIVITY}",
            "tool double",
        }
        # The polls' spans are exported in batches of their own: wait for them too, not only for the call's trace.
        spans = await spans_until(collector, wanted, task_id=task_id, also=frozenset({"tasks/get"}))
    finally:
        stack.stop()
    root = next(s for s in spans if s.name == "tools/call double" and s.attributes.get("mcp.task.id") == task_id)
    trace = [s for s in spans if s.trace_id == root.trace_id]
    by_name = {s.name: s for s in trace}
    assert {by_name[name].service for name in wanted} == {"mcp-tasks-temporal-front", "mcp-tasks-temporal-worker"}
    assert by_name[f"StartWorkflow:{TOOL_TASK_WORKFLOW}"].parent_id == root.span_id
    assert by_name["tool double"].parent_id == by_name[f"RunActivity:{RUN_TOOL_ACTIVITY}"].span_id
    assert by_name["tool double"].attributes["mcp.task.id"] == task_id
    gets = [s for s in spans if s.name == "tasks/get"]
    assert gets, "the polls were traced"
    assert all(s.attributes.get("mcp.task.id") == task_id for s in gets)


def metric_samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value, from the Prometheus text format."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            samples[series] = float(value)
    return samples


def find(samples: dict[str, float], name: str, **labels: str) -> float:
    """The value of the one series of `name` carrying all `labels` (others may be present too)."""
    matches = [
        value
        for series, value in samples.items()
        if series.split("{")[0] == name and all(f'{key}="{want}"' in series for key, want in labels.items())
    ]
    assert len(matches) == 1, f"{name}{labels}: {matches} in\n" + "\n".join(s for s in samples if name in s)
    return matches[0]


async def scrape(http: httpx.AsyncClient, port: int) -> dict[str, float]:
    response = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert response.status_code == 200
    return metric_samples(response.text)


async def test_metrics_endpoint_shows_task_creations_requests_and_sdk_metrics(
    stack_factory: Any, stack: Stack, http: httpx.AsyncClient, gate: Path
) -> None:
    front_port, worker_port = free_port(), free_port()
    private: Stack = stack_factory()
    private.add_worker(extra=["--metrics-port", str(worker_port)])
    url = private.add_front(extra=["--metrics-port", str(front_port)])
    mcp = TaskCalls(HttpMcp(url, http))
    for x in (1, 2):
        task_id = (await mcp.start("double", {"x": x}))["taskId"]
        assert (await mcp.wait_for(task_id))["status"] == "completed"
    unknown = await mcp.get("00000000-0000-4000-8000-000000000000")
    assert unknown.error["code"] == -32602

    front = await scrape(http, front_port)
    assert find(front, "mcp_task_creations_total", tool="double") == 2
    assert find(front, "mcp_requests_total", method="tools/call", outcome="ok") == 2
    assert find(front, "mcp_requests_total", method="tasks/get", outcome="error") == 1
    assert find(front, "mcp_errors_total", method="tasks/get", code="-32602") == 1
    assert find(front, "temporal_request_total", operation="StartWorkflowExecution") >= 2, "the SDK's own metrics"
    worker = await scrape(http, worker_port)
    assert find(worker, "temporal_activity_execution_latency_count", activity_type=RUN_TOOL_ACTIVITY) >= 2
    # Every series names the process's own service, as its traces do, not the SDK's `temporal-core-sdk`.
    for samples, service in ((front, "mcp-tasks-temporal-front"), (worker, "mcp-tasks-temporal-worker")):
        assert samples and all(f'service_name="{service}"' in series for series in samples), service

    watched = (await mcp.start("gated", {"gate": str(gate)}))["taskId"]
    async with http_listen(url, http, listen_message([watched])) as frames:
        await anext(frames)  # the acknowledgement: the subscription is open
        assert find(await scrape(http, front_port), "mcp_push_subscribers") == 1
    with anyio.fail_after(30):
        while find(await scrape(http, front_port), "mcp_push_subscribers") != 0:
            await anyio.sleep(0.1)
    (gate / "release").write_text("1")
    assert (await mcp.wait_for(watched))["status"] == "completed"


async def test_devs_metrics_and_traces_name_dev_as_their_service_with_its_worker_in_the_same_process(
    tmp_path: Path, http: httpx.AsyncClient, collector: Collector
) -> None:
    port, metrics_port = free_port(), free_port()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    extra = ["--metrics-port", str(metrics_port)]
    dev = start_dev(tmp_path, tmp_path / "state", port, free_port(), extra=extra, env=env)
    try:
        mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
        task_id = (await mcp.start("double", {"x": 4}))["taskId"]
        assert (await mcp.wait_for(task_id))["status"] == "completed"
        samples = await scrape(http, metrics_port)
        spans = await spans_until(collector, {"tools/call double", "tool double"}, task_id=task_id)
    finally:
        dev.stop(timeout=30)
    assert find(samples, "mcp_task_creations_total", tool="double") == 1
    assert find(samples, "temporal_activity_execution_latency_count", activity_type=RUN_TOOL_ACTIVITY) >= 1
    assert all('service_name="mcp-tasks-temporal-dev"' in series for series in samples)
    assert {s.service for s in spans if s.name in ("tools/call double", "tool double")} == {"mcp-tasks-temporal-dev"}


async def test_readyz_follows_temporal_while_healthz_stays_up(workdir: Path, http: httpx.AsyncClient) -> None:
    temporal_process, address = start_temporal(workdir)
    front = None
    try:
        queue = f"probe-{uuid.uuid4()}"
        front, url = start_front(workdir, address, queue)
        base = url.removesuffix("/mcp")
        # No worker polls this front's queue: Temporal answers, and readiness names what is missing.
        ready = await http.get(f"{base}/readyz")
        assert ready.status_code == 503 and f"no worker polls task queue {queue}" in ready.json()["reason"]
        temporal_process.stop()
        with anyio.fail_after(30):
            while (ready := await http.get(f"{base}/readyz")).json()["reason"] != "Temporal unreachable":
                await anyio.sleep(0.2)
        assert (ready.status_code, ready.json()) == (503, {"status": "unready", "reason": "Temporal unreachable"})
        assert (await http.get(f"{base}/healthz")).status_code == 200
    finally:
        if front is not None:
            front.stop()
        temporal_process.stop()


async def test_readyz_reports_a_missing_namespace(stack_factory: Any, http: httpx.AsyncClient) -> None:
    private: Stack = stack_factory()
    url = private.add_front(extra=["--namespace", f"absent-{uuid.uuid4().hex[:8]}"])
    ready = await http.get(url.replace("/mcp", "/readyz"))
    assert (ready.status_code, ready.json()) == (503, {"status": "unready", "reason": "namespace not found"})


@pytest.mark.parametrize(
    ("env", "flag", "on"),
    [
        ({}, False, False),
        ({}, True, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, False, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, False, True),
        ({"OTEL_TRACES_EXPORTER": "none"}, True, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, True, False),
    ],
)
def test_tracing_follows_the_standard_variables(
    env: dict[str, str], flag: bool, on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tracing_requested(os.environ, flag) is on
