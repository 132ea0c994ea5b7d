"""What every process serving one task queue must agree on, checked against the running ones when each starts.

A front without the workers' payload storage cannot read a large result (TMPRL1105 on the
first `tasks/get` of it); a process whose codec keys cannot open what the others seal fails
on the first task it reads; a versioned worker beside an unversioned one splits the queue.
Each of those shows late, on a client's request. So every process says what it holds for as
long as it runs, and every process compares at start with those running, refusing with one
line naming the setting and the running process it disagrees with.

What a process holds is the identity of one long poll it keeps open on a task queue of its
own kind, `mcp-tasks-settings/<task queue>`, where no workflow ever runs (`announce_settings`).
Temporal lists a queue's pollers with the time each last polled (`DescribeTaskQueue`) and
forgets one that stops, so the check is that one call (`check_shared_settings`): nothing is
written, no workflow runs, and a process that stopped is no longer named once `LIVE_WITHIN_S`
have passed. A deliberate change of storage or versioning needs nothing more than stopping the
processes that hold the old setting; key rotation rolls as it always did (a key added, moved
first, the old one dropped: each step agrees with the one before).

Fronts hold out which secret keys their owner keys (a fingerprint that says nothing of the
secret): a front under another secret, or none, would see only the tasks created through itself.
And whether a process is a front at all, so a worker learns whether any front uses its queue
(`fronts_running`).

Two processes that start within a second of each other with settings that disagree may both
start; the check is a safeguard at start, not a lock.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, fields
from datetime import timedelta
from typing import Any, Final, cast

import anyio
from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, PollWorkflowTaskQueueRequest
from temporalio.client import Client
from temporalio.converter import DataConverter, ExternalStorage, PayloadCodec
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.temporal.codec import AesGcmCodec
from mcp_tasks_temporal.temporal.ids import OWNER_SECRET_ENV, UNKEYED_FINGERPRINT
from mcp_tasks_temporal.temporal.payload_storage import ReadFailuresNamed, StorageSettings

logger = logging.getLogger(__name__)

SETTINGS_QUEUE_PREFIX: Final = "mcp-tasks-settings/"
POLL_S: Final = 10.0
"""How long each poll of a running process lasts: Temporal answers an empty one about a second early."""
LIVE_WITHIN_S: Final = 30.0
"""A process whose poll is older than this has stopped: three polls missed."""
MAX_IDENTITY_CHARS: Final = 1000
"""Temporal refuses a longer poller identity."""
_CARD: Final = "mcp-tasks-settings"
"""Marks an identity as a settings card (and its format's version)."""


class SettingsDisagreement(ValueError):
    """This process's settings do not match those a running process of the task queue holds."""


@dataclass(frozen=True)
class SharedSettings:
    """The settings of one process that the others of its task queue must share."""

    storage: str
    """`none`, or the driver and where it keeps payloads (`local /dir`, `s3 bucket`)."""
    threshold: int | None
    """Payloads from this size go to storage (None without storage)."""
    codec: list[str]
    """The codec's key IDs, the encrypting one first; a codec of the user's own by its name; [] for none."""
    deployment: str | None
    """The worker deployment a worker registers in ("" unversioned); None from a front, which does not know."""
    writer: str = ""
    """Who holds them, as a disagreement names it: `worker pid 4242 on build-7`."""
    owner_keys: str | None = None
    """Which secret keys a front's owner keys (`OwnerKeying.fingerprint()`); None from a worker, which keys none."""
    front: bool = False
    """The process serves MCP clients on this queue (`serve`, `dev`, an `mcp_endpoint`)."""

    @classmethod
    def of(
        cls,
        role: str,
        storage: StorageSettings,
        codec: PayloadCodec | None,
        deployment: str | None,
        *,
        owner_keys: str | None = None,
        front: bool = False,
    ) -> SharedSettings:
        return cls(
            storage=_storage_text(storage),
            threshold=storage.threshold if storage.enabled else None,
            codec=_codec_ids(codec),
            deployment=deployment,
            writer=_writer(role),
            owner_keys=owner_keys,
            front=front,
        )

    @classmethod
    def of_converter(
        cls,
        role: str,
        converter: DataConverter,
        deployment: str | None,
        *,
        owner_keys: str | None = None,
        front: bool = False,
    ) -> SharedSettings:
        """The settings a client's converter reads and writes with (a worker built on `McpTasksPlugin`, a front)."""
        storage = converter.external_storage
        return cls(
            storage=_external_storage_text(storage),
            threshold=storage.payload_size_threshold if storage is not None else None,
            codec=_codec_ids(converter.payload_codec),
            deployment=deployment,
            writer=_writer(role),
            owner_keys=owner_keys,
            front=front,
        )

    def card(self) -> str:
        """These settings as a poller identity (`announce_settings`)."""
        return json.dumps({_CARD: 1, **asdict(self)}, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_card(cls, identity: str) -> SharedSettings | None:
        """The settings a poller's identity holds; None for any other poller (or a card of another format)."""
        try:
            value: Any = json.loads(identity)
        except ValueError:
            return None
        if not isinstance(value, dict) or value.pop(_CARD, None) != 1:  # pyright: ignore[reportUnknownMemberType]
            return None
        # A field a later version added is left out, so processes of two versions still compare what both hold.
        known = {field.name for field in fields(cls)}
        held = cast("dict[str, Any]", value)
        try:
            return cls(**{name: item for name, item in held.items() if name in known})
        except TypeError:
            return None


def _writer(role: str) -> str:
    return f"{role} pid {os.getpid()} on {socket.gethostname()}"


def settings_queue(task_queue: str) -> str:
    """The task queue whose pollers are the running processes of `task_queue`, each with its settings."""
    return f"{SETTINGS_QUEUE_PREFIX}{task_queue}"


async def running_settings(
    client: Client, task_queue: str, *, live_within_s: float = LIVE_WITHIN_S
) -> list[SharedSettings]:
    """The settings of the processes of `task_queue` running now: one `DescribeTaskQueue`.

    Raises:
        RPCError: Temporal could not be asked.
    """
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=settings_queue(task_queue), kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    response = await client.workflow_service.describe_task_queue(request)
    now = time.time()
    running: list[SharedSettings] = []
    for poller in response.pollers:
        if now - poller.last_access_time.ToMicroseconds() / 1e6 > live_within_s:
            continue
        settings = SharedSettings.from_card(poller.identity)
        if settings is not None:
            running.append(settings)
    return sorted(running, key=lambda settings: settings.writer)


async def check_shared_settings(
    client: Client, task_queue: str, mine: SharedSettings, *, live_within_s: float = LIVE_WITHIN_S
) -> None:
    """Compare `mine` with the settings of every process of `task_queue` running now.

    Raises:
        SettingsDisagreement: one line naming the setting and the running process it disagrees with.
    """
    try:
        running = await running_settings(client, task_queue, live_within_s=live_within_s)
    except RPCError as err:
        # A namespace not created yet (a front may start first), or no right to describe task queues:
        # the check is a safeguard, not a reason not to start.
        logger.warning("could not check the shared settings of task queue %s: %s", task_queue, err.message)
        return
    for theirs in running:
        problem = disagreement(mine, theirs)
        if problem is not None:
            raise SettingsDisagreement(
                f"{problem} (task queue {task_queue}, namespace {client.namespace}; stop that process, or start "
                "this one with its settings)"
            )


@asynccontextmanager
async def announce_settings(
    client: Client, task_queue: str, mine: SharedSettings, *, poll_s: float = POLL_S
) -> AsyncGenerator[None]:
    """Hold `mine` out to the processes of `task_queue` that start while this block runs.

    One long poll at a time, on the settings queue, with the settings as its identity; Temporal
    forgets it within `LIVE_WITHIN_S` of the block's end, however the process ends.
    """
    identity = mine.card()
    if len(identity) > MAX_IDENTITY_CHARS:
        logger.warning(
            "the settings of this process are too long to hold out to the others of task queue %s (%d characters,"
            " Temporal takes %d): they are not compared with them",
            task_queue,
            len(identity),
            MAX_IDENTITY_CHARS,
        )
        yield
        return
    request = PollWorkflowTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=settings_queue(task_queue), kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        identity=identity,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(_keep_polling, client, request, poll_s)
        try:
            yield
        finally:
            group.cancel_scope.cancel()


async def _keep_polling(client: Client, request: PollWorkflowTaskQueueRequest, poll_s: float) -> None:
    failing = False
    while True:
        try:
            # No workflow runs on this queue: the poll's answer is always empty, its identity is the point.
            await client.workflow_service.poll_workflow_task_queue(request, timeout=timedelta(seconds=poll_s))
        except RPCError as err:
            if err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
                continue  # the poll ran its course
            if not failing:
                logger.warning(
                    "cannot hold out this process's settings on %s (%s); other processes starting now do not"
                    " compare with them",
                    request.task_queue.name,
                    err.message,
                )
            failing = True
            await anyio.sleep(poll_s)
            continue
        if failing:
            logger.warning("this process's settings are held out on %s again", request.task_queue.name)
        failing = False


def disagreement(mine: SharedSettings, theirs: SharedSettings) -> str | None:
    """What this process's settings contradict in another's, in one line; None when they fit."""
    this = f"this {mine.writer.split(' pid ', 1)[0] or 'process'}"
    if mine.storage != theirs.storage:
        return f"payload storage: {this} has {mine.storage}, {theirs.writer} has {theirs.storage}"
    if mine.threshold != theirs.threshold:
        return (
            f"payload storage threshold: {this} stores from {mine.threshold} bytes, "
            f"{theirs.writer} from {theirs.threshold}"
        )
    if bool(mine.codec) != bool(theirs.codec):
        ours, recorded = _codec_text(mine.codec), _codec_text(theirs.codec)
        return f"payload codec: {this} has {ours}, {theirs.writer} has {recorded}"
    if mine.codec and mine.codec[0] not in theirs.codec:
        return f"codec keys: {this} encrypts with key {mine.codec[0]}, which {theirs.writer} does not have"
    if theirs.codec and theirs.codec[0] not in mine.codec:
        return f"codec keys: {theirs.writer} encrypts with key {theirs.codec[0]}, which {this} does not have"
    if mine.deployment is not None and theirs.deployment is not None and mine.deployment != theirs.deployment:
        return (
            f"tool-task versioning: {this} runs {_deployment_text(mine.deployment)}, "
            f"{theirs.writer} runs {_deployment_text(theirs.deployment)}"
        )
    if mine.owner_keys is not None and theirs.owner_keys is not None and mine.owner_keys != theirs.owner_keys:
        return _owner_keys_text(this, mine.owner_keys, theirs.writer, theirs.owner_keys)
    return None


def _owner_keys_text(this: str, mine: str, writer: str, theirs: str) -> str:
    split = "each would see only the tasks created through itself"
    if mine == UNKEYED_FINGERPRINT:
        return (
            f"owner keys: {this} has no ${OWNER_SECRET_ENV} (unkeyed owner keys), {writer} keys them under one: "
            f"{split}; give this one the same ${OWNER_SECRET_ENV}"
        )
    if theirs == UNKEYED_FINGERPRINT:
        return (
            f"owner keys: {this} keys them under ${OWNER_SECRET_ENV}, {writer} has none (unkeyed owner keys): "
            f"{split}; give every front the same ${OWNER_SECRET_ENV}"
        )
    return (
        f"owner keys: {this} and {writer} key them under different ${OWNER_SECRET_ENV} values (fingerprints "
        f"{mine} and {theirs}): {split}; give every front the same ${OWNER_SECRET_ENV}"
    )


def _storage_text(storage: StorageSettings) -> str:
    if not storage.enabled:
        return "none"
    where = storage.bucket or (str(storage.directory.resolve()) if storage.directory is not None else "")
    return f"{storage.kind} {where}".strip()


def _external_storage_text(storage: ExternalStorage | None) -> str:
    """As `_storage_text` for storage opened by `open_storage`; a driver of the user's own by its type and name."""
    if storage is None:
        return "none"
    described = [
        _storage_text(driver.settings)
        if isinstance(driver, ReadFailuresNamed) and driver.settings is not None
        else f"{driver.type()} {driver.name()}"
        for driver in storage.drivers
    ]
    return ", ".join(described)


def _codec_ids(codec: PayloadCodec | None) -> list[str]:
    if codec is None:
        return []
    if isinstance(codec, AesGcmCodec):
        return list(codec.key_ids)
    return [f"{type(codec).__module__}.{type(codec).__qualname__}"]


def _codec_text(codec: list[str]) -> str:
    return f"a codec (key {codec[0]})" if codec else "no codec"


def _deployment_text(deployment: str) -> str:
    return f"deployment {deployment}" if deployment else "unversioned"
