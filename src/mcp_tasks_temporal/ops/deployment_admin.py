"""`admin deployment` and `admin set-current`: a worker deployment's builds, and which one is current.

    mcp-tasks-temporal admin deployment --deployment-name tasks
    mcp-tasks-temporal admin set-current --deployment-name tasks --build-id 2026.12.03

Setting a build current sends every new task to it and moves the auto-upgrade
ones; pinned tasks stay on their build, which drains as they close. Check the
new build against the running tasks' histories first (`audit --verify`,
docs/operations.md).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.enums.v1 import VersionDrainageStatus, WorkerDeploymentVersionStatus

from mcp_tasks_temporal.ops.operator_args import EXIT_USAGE, DeploymentArgs
from mcp_tasks_temporal.ops.operator_connection import connect
from mcp_tasks_temporal.temporal.deployment import Deployment, SetCurrentError, describe, set_current, version_text


def _time(stamp: Timestamp) -> str | None:
    return stamp.ToDatetime().isoformat() + "Z" if stamp.seconds else None


def _status(value: int) -> str:
    name = WorkerDeploymentVersionStatus.Name(value)  # pyright: ignore[reportArgumentType]
    return name.removeprefix("WORKER_DEPLOYMENT_VERSION_STATUS_").lower()


def _drainage(value: int) -> str | None:
    if not value:
        return None
    return VersionDrainageStatus.Name(value).removeprefix("VERSION_DRAINAGE_STATUS_").lower()  # pyright: ignore[reportArgumentType]


async def run_deployment(args: DeploymentArgs) -> int:
    client = await connect(args.settings, args.command)
    name = args.settings.deployment_name
    described = await describe(client, name)
    if described is None:
        print(
            f"mcp-tasks-temporal: no worker deployment {name!r} in namespace {client.namespace}; a worker started with "
            "--deployment-name and --build-id creates it",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_USAGE
    info = described.worker_deployment_info
    routing = info.routing_config
    builds: list[dict[str, Any]] = [
        {
            "build": version_text(summary.deployment_version),
            "status": _status(summary.status),
            "drainage": _drainage(summary.drainage_status),
            "createdAt": _time(summary.create_time),
        }
        for summary in info.version_summaries
    ]
    document = {
        "deployment": info.name,
        "current": version_text(routing.current_deployment_version),
        "ramping": version_text(routing.ramping_deployment_version),
        "builds": builds,
    }
    if args.json:
        print(json.dumps(document, indent=2), flush=True)
        return 0
    print(f"deployment {info.name}: current {document['current'] or '-'}", flush=True)
    for build in builds:
        print(build_line(build), flush=True)
    return 0


def build_line(build: dict[str, Any]) -> str:
    """One build of `admin deployment`'s listing; its drainage only where the status does not say it already."""
    drainage = build["drainage"]
    said = f" ({drainage})" if drainage and drainage != build["status"] else ""
    return f"  {build['build']}  {build['status']}{said}  since {build['createdAt']}"


async def run_set_current(args: DeploymentArgs) -> int:
    client = await connect(args.settings, args.command)
    deployment = Deployment(args.settings.deployment_name, args.build_id)
    # A build with no worker polling yet is refused quickly, not waited for: the operator starts its workers first.
    try:
        await set_current(client, deployment, wait_s=args.wait)
    except SetCurrentError as err:
        print(f"mcp-tasks-temporal: {err}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    print(f"{deployment} is current: new tasks run on it", file=sys.stderr, flush=True)
    return 0
