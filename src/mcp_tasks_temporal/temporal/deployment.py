"""Worker deployment versioning: which build a worker is, and which build each task runs on.

A worker started with a deployment name and a build ID registers as that
version of the deployment on every task queue it polls. New tasks go to the
deployment's *current* version; a task whose workflow type is pinned stays on
the version it started on until it closes, and an auto-upgrade one moves to the
current version at its next workflow task. Without a deployment the worker is
unversioned, as before.

Workflow types a worker runs without a behaviour of their own (an app's
workflow tools, its plugins' workflows, pinned tool tasks) are pinned: their
code is the user's, and a change to it is safest on the tasks that start after
the deploy. Temporal refuses a behaviour from an unversioned worker, so the
tool-task workflow declares its own only in the class a versioned worker runs.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Final, Literal, cast

import anyio
from temporalio.api.deployment.v1 import WorkerDeploymentVersion as WorkerDeploymentVersionProto
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    DescribeWorkerDeploymentResponse,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from mcp_tasks_temporal.temporal.search_attributes import query_literal

logger = logging.getLogger(__name__)

Versioning = Literal["pinned", "auto-upgrade"]
"""How a task's workflow meets a deploy: `pinned` finishes on the build it started on,
`auto-upgrade` moves to the current build at its next workflow task."""

VERSIONINGS: Final[tuple[Versioning, ...]] = ("pinned", "auto-upgrade")
BEHAVIORS: Final[dict[Versioning, VersioningBehavior]] = {
    "pinned": VersioningBehavior.PINNED,
    "auto-upgrade": VersioningBehavior.AUTO_UPGRADE,
}
VERSION_SEARCH_ATTRIBUTE: Final = "TemporalWorkerDeploymentVersion"
"""Temporal's own search attribute: `<deployment name>:<build ID>` of the version a task last ran on."""

_REGISTER_WAIT_S: Final = 60.0


def versioning_of(behavior: VersioningBehavior) -> Versioning | None:
    """The versioning a workflow class declares in `@workflow.defn(versioning_behavior=...)`, if any."""
    for name, value in BEHAVIORS.items():
        if value == behavior:
            return name
    return None


def check_versioning(value: object) -> Versioning:
    if value not in VERSIONINGS:
        raise ValueError(f"versioning must be one of {', '.join(map(repr, VERSIONINGS))}, not {value!r}")
    return value  # pyright: ignore[reportReturnType]


@dataclass(frozen=True)
class Deployment:
    """The version a worker registers as: `--deployment-name` and `--build-id`."""

    name: str
    build_id: str

    def __post_init__(self) -> None:
        if not self.name or not self.build_id:
            raise ValueError("a worker deployment needs both a deployment name and a build ID")
        if "." in self.name or ":" in self.name:
            raise ValueError(f"a deployment name may not contain '.' or ':' (Temporal's separators): {self.name!r}")

    @classmethod
    def from_args(cls, name: str | None, build_id: str | None) -> Deployment | None:
        """The deployment of `--deployment-name`/`--build-id`: both or neither."""
        if not name and not build_id:
            return None
        if not name or not build_id:
            raise ValueError("--deployment-name and --build-id go together: give both, or neither for no versioning")
        return cls(name, build_id)

    @property
    def version(self) -> WorkerDeploymentVersion:
        return WorkerDeploymentVersion(deployment_name=self.name, build_id=self.build_id)

    def worker_config(self) -> WorkerDeploymentConfig:
        return WorkerDeploymentConfig(
            version=self.version,
            use_worker_versioning=True,
            default_versioning_behavior=VersioningBehavior.PINNED,
        )

    def __str__(self) -> str:
        return f"{self.name}:{self.build_id}"


class SetCurrentError(RuntimeError):
    """A build could not be made current: no worker of it polled in time, or Temporal refused."""


async def set_current(client: Client, deployment: Deployment, *, wait_s: float = _REGISTER_WAIT_S) -> None:
    """Make `deployment`'s build the current one: new tasks run on it, auto-upgrade tasks move to it.

    A version exists once one of its workers has polled, a moment after the worker
    starts, so a version Temporal does not know yet is waited for (up to `wait_s`).

    Raises:
        SetCurrentError: with Temporal's last word, once `wait_s` has passed.
    """
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace,
        deployment_name=deployment.name,
        build_id=deployment.build_id,
        identity=client.identity,
    )
    last = "no answer"
    with anyio.move_on_after(wait_s):
        while True:
            try:
                await client.workflow_service.set_worker_deployment_current_version(request)
                return
            except RPCError as err:
                if err.status not in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                    raise SetCurrentError(f"Temporal refused to make {deployment} current: {err.message}") from None
                last = err.message
                logger.debug("version %s not registered yet: %s", deployment, last)
            await anyio.sleep(0.2)
    raise SetCurrentError(
        f"could not make {deployment} current within {wait_s:g}s ({last}); has a worker of it polled?"
    )


async def describe(client: Client, name: str) -> DescribeWorkerDeploymentResponse | None:
    """The deployment's versions and routing; `None` if no worker of it ever polled."""
    try:
        return await client.workflow_service.describe_worker_deployment(
            DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=name)
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise


async def pinned_on_other_builds(client: Client, deployment: Deployment, *, limit: int = 1000) -> Counter[str]:
    """Running pinned workflows of `deployment`'s deployment on its other builds, counted by build.

    They go on only while a worker of their own build polls: after a restart
    as a new build (`dev` on one machine), nothing else runs them. The first
    `limit` found are counted.
    """
    query = " AND ".join(
        [
            f"TemporalWorkerDeployment = {query_literal(deployment.name)}",
            f"{VERSION_SEARCH_ATTRIBUTE} != {query_literal(str(deployment))}",
            "TemporalWorkflowVersioningBehavior = 'Pinned'",
            "ExecutionStatus = 'Running'",
        ]
    )
    builds = Counter[str]()
    async for execution in client.list_workflows(query, limit=limit):
        builds[build_of(execution.raw_info) or "?"] += 1
    return builds


def version_text(version: WorkerDeploymentVersionProto) -> str | None:
    return f"{version.deployment_name}:{version.build_id}" if version.build_id else None


def build_of(info: WorkflowExecutionInfo) -> str | None:
    """`<deployment>:<build>` a task's workflow runs on, or `None` for an unversioned one.

    From the execution's versioning info (describe), else Temporal's search
    attribute (visibility, which is what a listing has).
    """
    if info.HasField("versioning_info"):
        versioning = info.versioning_info
        if versioning.HasField("deployment_version"):
            text = version_text(versioning.deployment_version)
            if text:
                return text
        if versioning.version:
            return versioning.version.replace(".", ":", 1)
    payload = info.search_attributes.indexed_fields.get(VERSION_SEARCH_ATTRIBUTE)
    if payload is None or not payload.data:
        return None
    try:
        value = json.loads(payload.data)
    except ValueError:
        return None
    if isinstance(value, list):
        value = next(iter(cast("list[object]", value)), None)
    return str(value) if value else None
