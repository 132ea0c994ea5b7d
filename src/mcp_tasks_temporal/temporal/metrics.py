"""Prometheus metrics: the Temporal SDK's own and the process's, on one `/metrics` endpoint.

A front's and a worker's counters are created on the Temporal runtime's metric meter,
so the SDK's exporter serves them next to its client and worker metrics: one port to
scrape, no second HTTP server. Without `--metrics-port` the meter is Temporal's no-op
one and recording costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult
from pydantic import ValidationError
from temporalio.common import MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

_runtime: list[Runtime] = []

# Method names come from clients; only these become label values, so a client cannot grow the series count.
KNOWN_METHODS: Final = frozenset(
    {
        "initialize",
        "server/discover",
        "ping",
        "tools/list",
        "tools/call",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "subscriptions/listen",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "notifications/initialized",
        "notifications/cancelled",
    }
)


def install_metrics(bind_address: str, *, service: str, environ: Mapping[str, str] | None = None) -> Runtime:
    """Create this process's Temporal runtime with a Prometheus endpoint at `bind_address` (`HOST:PORT`).

    Every series carries `service_name`: `service` (`mcp-tasks-temporal-worker`, `-front`, `-dev`),
    or `OTEL_SERVICE_NAME` from `environ` as traces do, where the SDK would say `temporal-core-sdk`.
    It becomes the default runtime, so every Temporal client made afterwards in
    this process reports through it; call before the first client connects.
    """
    if _runtime:
        return _runtime[0]
    config = PrometheusConfig(bind_address=bind_address, counters_total_suffix=True, durations_as_seconds=True)
    name = (environ or {}).get("OTEL_SERVICE_NAME") or service
    telemetry = TelemetryConfig(metrics=config, attach_service_name=False, global_tags={"service_name": name})
    runtime = Runtime(telemetry=telemetry)
    Runtime.set_default(runtime)
    _runtime.append(runtime)
    return runtime


def metrics_runtime() -> Runtime | None:
    """The runtime `install_metrics` made, for `Client.connect(runtime=...)`; `None` means the SDK default."""
    return _runtime[0] if _runtime else None


class FrontMetrics:
    """What a front server counts: requests by method and outcome, errors, task creations, push subscribers."""

    def __init__(self, meter: MetricMeter | None = None) -> None:
        meter = meter or MetricMeter.noop
        self._requests = meter.create_counter("mcp_requests", "MCP requests handled, by method and outcome")
        self._errors = meter.create_counter("mcp_errors", "JSON-RPC errors answered, by method and code")
        self._tasks_created = meter.create_counter(
            "mcp_task_creations", "Tasks created, by tool and by what answered the call (the task, or the result)"
        )
        self._subscribers = meter.create_gauge("mcp_push_subscribers", "Open task subscriptions on this front server")
        self._subscriber_count = 0

    @classmethod
    def from_runtime(cls) -> FrontMetrics:
        runtime = metrics_runtime()
        return cls(runtime.metric_meter if runtime is not None else None)

    def request(self, method: str, outcome: str) -> None:
        self._requests.add(1, {"method": _method_label(method), "outcome": outcome})

    def error(self, method: str, code: int) -> None:
        self._errors.add(1, {"method": _method_label(method), "code": str(code)})

    def task_created(self, tool: str, *, answered: str = "task") -> None:
        """`answered`: `task` (a `CreateTaskResult`) or `result` (the tool's result, the run's within its budget)."""
        self._tasks_created.add(1, {"tool": tool, "answered": answered})

    def subscribers_changed(self, delta: int) -> None:
        self._subscriber_count = max(0, self._subscriber_count + delta)
        self._subscribers.set(self._subscriber_count)


class WorkerMetrics:
    """What a worker counts: its tasks' workflows that start failing, and those the failing-workflow policy ends.

    Counted where the failure happens, when it happens, with no read of the task needed;
    each series of failures once, by the worker that reported its first failure to Temporal.
    """

    def __init__(self, meter: MetricMeter | None = None) -> None:
        meter = meter or MetricMeter.noop
        self._failing = meter.create_counter(
            "mcp_failing_workflows", "Tasks whose workflow task started failing, by tool and kind, once per series"
        )
        self._ended = meter.create_counter(
            "mcp_failing_workflows_ended", "Tasks ended failed by the failing-workflow policy, by tool and kind"
        )

    def workflow_failing(self, tool: str, kind: str) -> None:
        self._failing.add(1, {"tool": tool, "kind": kind})

    def failing_workflow_ended(self, tool: str, kind: str) -> None:
        self._ended.add(1, {"tool": tool, "kind": kind})


def _method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"


def outcome_of(result: object) -> str:
    """`ok`, or `tool_error` for a `tools/call` whose tool reported an error (a result, not a JSON-RPC error)."""
    if isinstance(result, CallToolResult) and result.is_error:
        return "tool_error"
    if isinstance(result, Mapping) and result.get("isError") is True:  # pyright: ignore[reportUnknownMemberType]
        return "tool_error"
    return "ok"


class RequestMetrics:
    """Server middleware counting every request by method and outcome; install first, so it sees them all."""

    def __init__(self, metrics: FrontMetrics) -> None:
        self._metrics = metrics

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            result = await call_next(ctx)
        except MCPError as err:
            self._failed(ctx.method, err.error.code)
            raise
        except ValidationError:
            self._failed(ctx.method, INVALID_PARAMS)  # the SDK answers a params validation error with -32602
            raise
        except Exception:
            self._failed(ctx.method, INTERNAL_ERROR)
            raise
        self._metrics.request(ctx.method, outcome_of(result))
        return result

    def _failed(self, method: str, code: int) -> None:
        self._metrics.request(method, "error")
        self._metrics.error(method, code)
