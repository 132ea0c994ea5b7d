"""OpenTelemetry tracing: one trace from a `tools/call` through the workflow and its activities to the tool.

Switched on by the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_TRACES_EXPORTER`) or `--otel`;
`OTEL_SDK_DISABLED=true` wins over both. The mcp SDK already opens a span for
every request; this module gives it temporalio's replay-safe tracer provider and
hands temporalio's `OpenTelemetryPlugin` to every client, which carries the
context through the workflow start into the workflow and each activity (and on
to workers, which take their client's plugins). Exporters are the ones
OpenTelemetry packages register under the `opentelemetry_traces_exporter` entry
point, chosen by `OTEL_TRACES_EXPORTER` as the OpenTelemetry environment
specification says; their endpoint, headers, batching and the resource
(`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) follow it too.

The SDK and the OTLP exporter come with the `otel` extra; without them, asking
for tracing is a start-up error rather than silently no traces.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Any

from opentelemetry import trace

from mcp_tasks_temporal.temporal.contract import TASK_ID_ATTRIBUTE

logger = logging.getLogger(__name__)

_TRACER = trace.get_tracer("mcp_tasks_temporal")

_installed: list[Any] = []
"""The tracer provider this process installed (at most one), for the flush on exit."""


def tracing_requested(environ: Mapping[str, str], flag: bool = False) -> bool:
    """Whether the flag or the standard `OTEL_*` variables in `environ` ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = _exporter_names(environ)
    if exporters is not None:
        return exporters != ["none"]
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return flag or any(environ.get(name) for name in endpoints)


def _exporter_names(environ: Mapping[str, str]) -> list[str] | None:
    raw = environ.get("OTEL_TRACES_EXPORTER")
    if raw is None or not raw.strip():
        return None
    return [name.strip().lower() for name in raw.split(",") if name.strip()]


def setup_tracing(service_name: str, environ: Mapping[str, str], *, flag: bool = False) -> bool:
    """Install a tracer provider for this process when tracing is asked for; returns whether it is on.

    `service_name` is the default for `service.name` (`OTEL_SERVICE_NAME` overrides it). The
    exporters take their endpoint, headers and batching from the same `OTEL_*` variables themselves.

    Raises:
        ValueError: Tracing is asked for but the `otel` extra is missing, or an exporter is unknown.
    """
    if _installed:
        return True
    if not tracing_requested(environ, flag):
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from temporalio.contrib.opentelemetry import create_tracer_provider
    except ImportError:
        raise ValueError("tracing needs the OpenTelemetry SDK: pip install 'mcp-tasks-temporal[otel]'") from None
    attributes = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    # Replay-safe: a workflow replayed on another worker does not emit its spans twice.
    provider = create_tracer_provider(resource=Resource.create(attributes))
    for exporter in _exporters(_exporter_names(environ) or ["otlp"], environ):
        # Batching parameters come from OTEL_BSP_*.
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _installed.append(provider)
    logger.info("OpenTelemetry tracing on (service %s)", service_name)
    return True


def _exporters(names: Sequence[str], environ: Mapping[str, str]) -> list[Any]:
    return [_exporter(name, environ) for name in names if name != "none"]


def _exporter(name: str, environ: Mapping[str, str]) -> Any:
    """The exporter an installed OpenTelemetry package registers as `name`.

    `otlp` means OTLP over the protocol `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` names,
    http/protobuf by default (the specification's recommendation), as the SDK's own
    auto-configuration resolves it.
    """
    registered = name
    if name == "otlp":
        protocol = (
            environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
        ).strip()
        registered = "otlp_proto_grpc" if protocol == "grpc" else "otlp_proto_http"
    found = entry_points(group="opentelemetry_traces_exporter", name=registered)
    if not found:
        if name == "otlp":
            grpc = registered.endswith("grpc")
            package = "opentelemetry-exporter-otlp-proto-grpc" if grpc else "mcp-tasks-temporal[otel]"
            over = "grpc" if grpc else "http/protobuf"
            raise ValueError(f"OTLP trace export over {over} needs: pip install '{package}'")
        available = sorted({"otlp", "none", *(e.name for e in entry_points(group="opentelemetry_traces_exporter"))})
        raise ValueError(f"OTEL_TRACES_EXPORTER: unsupported exporter {name!r} ({', '.join(available)})")
    # Endpoint, headers, certificates, compression and timeout: all from OTEL_EXPORTER_OTLP_*.
    return next(iter(found)).load()()


def tracing_plugins() -> list[Any]:
    """What every Temporal client of this process takes, so its workflows and activities join the caller's trace.

    Empty until `setup_tracing` has turned tracing on. A worker built on the
    client applies the plugin too.
    """
    if not _installed:
        return []
    from temporalio.contrib.opentelemetry import OpenTelemetryPlugin

    return [OpenTelemetryPlugin(add_temporal_spans=True)]


def shutdown_tracing() -> None:
    """Export what is still buffered; called once on the way out."""
    while _installed:
        _installed.pop().shutdown()


@contextmanager
def tool_span(tool: str, task_id: str) -> Generator[None]:
    """The span of a tool running inside its task's activity (a child of Temporal's `RunActivity` span)."""
    attributes = {TASK_ID_ATTRIBUTE: task_id, "gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool"}
    with _TRACER.start_as_current_span(f"tool {tool}", kind=trace.SpanKind.INTERNAL, attributes=attributes):
        yield
