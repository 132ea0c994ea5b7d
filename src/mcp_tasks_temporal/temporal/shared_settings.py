"""What every process serving one task queue must agree on, checked when each starts.

A front without the workers' payload storage cannot read a large result (TMPRL1105 on the
first `tasks/get` of it); a process whose codec keys cannot open what the others seal fails
on the first task it reads; a versioned worker beside an unversioned one splits the queue.
Each of those shows late, on a client's request. So the first process of a task queue
records its settings in Temporal itself, and every later one compares at start and refuses
with one line naming the setting and the process it disagrees with.

The record is the memo of a workflow that never runs (`mcp-tasks-settings/<task queue>`, on
a queue no worker polls), written without the codec so that any process can read it. A
change every process agrees to (a codec key added, moved first) replaces the record with the
newer settings, so key rotation rolls as before. A deliberate change of storage or versioning
starts from an empty record: terminate it (the refusal prints the command).
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import asdict, dataclass
from typing import Final

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.converter import DataConverter, ExternalStorage, PayloadCodec
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.temporal.codec import AesGcmCodec
from mcp_tasks_temporal.temporal.contract import as_object
from mcp_tasks_temporal.temporal.payload_storage import ReadFailuresNamed, StorageSettings

logger = logging.getLogger(__name__)

RECORD_PREFIX: Final = "mcp-tasks-settings/"
RECORD_QUEUE: Final = "mcp-tasks-settings"
"""No worker polls it: the record's workflow never runs, its memo is all it is for."""
RECORD_TYPE: Final = "mcp_tasks.SharedSettings"
_MEMO_KEY: Final = "settings"


class SettingsDisagreement(ValueError):
    """This process's settings do not match those the task queue's other processes recorded."""


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

    @classmethod
    def of(
        cls, role: str, storage: StorageSettings, codec: PayloadCodec | None, deployment: str | None
    ) -> SharedSettings:
        return cls(
            storage=_storage_text(storage),
            threshold=storage.threshold if storage.enabled else None,
            codec=_codec_ids(codec),
            deployment=deployment,
            writer=_writer(role),
        )

    @classmethod
    def of_converter(cls, role: str, converter: DataConverter, deployment: str | None) -> SharedSettings:
        """The settings a client's converter reads and writes with (a worker built on `McpTasksPlugin`)."""
        storage = converter.external_storage
        return cls(
            storage=_external_storage_text(storage),
            threshold=storage.payload_size_threshold if storage is not None else None,
            codec=_codec_ids(converter.payload_codec),
            deployment=deployment,
            writer=_writer(role),
        )


def _writer(role: str) -> str:
    return f"{role} pid {os.getpid()} on {socket.gethostname()}"


def record_id(task_queue: str) -> str:
    return f"{RECORD_PREFIX}{task_queue}"


async def check_shared_settings(client: Client, task_queue: str, mine: SharedSettings, *, owner: bool = False) -> None:
    """Compare with the task queue's record, writing it when there is none.

    `owner`: the process that starts the others on a Temporal of its own (`dev`) writes its
    settings whatever the record said; the processes it starts, and any started beside them,
    then compare with those.

    Raises:
        SettingsDisagreement: one line naming the setting and the process it disagrees with.
    """
    plain = Client(client.service_client, namespace=client.namespace, data_converter=DataConverter.default)
    try:
        await _agree(plain, task_queue, mine, owner=owner)
    except RPCError as err:
        # A namespace not created yet (a front may start first), or no right to start workflows:
        # the check is a safeguard, not a reason not to start.
        logger.warning("could not check the shared settings of task queue %s: %s", task_queue, err.message)


async def _agree(client: Client, task_queue: str, mine: SharedSettings, *, owner: bool) -> None:
    workflow_id = record_id(task_queue)
    if owner:
        await _write(client, workflow_id, mine, replace=True)
        return
    for _ in range(3):  # another process may write it between our read and our write
        theirs = await _read(client, workflow_id)
        if theirs is None:
            if await _write(client, workflow_id, mine, replace=False):
                return
            continue
        problem = disagreement(mine, theirs)
        if problem is not None:
            raise SettingsDisagreement(
                f"{problem} (task queue {task_queue}, namespace {client.namespace}; for a deliberate change "
                f"stop every process, then `temporal workflow terminate --workflow-id {workflow_id}`)"
            )
        merged = SharedSettings(
            storage=mine.storage,
            threshold=mine.threshold,
            codec=mine.codec,
            deployment=theirs.deployment if mine.deployment is None else mine.deployment,
            writer=mine.writer,
        )
        if (merged.codec, merged.deployment) != (theirs.codec, theirs.deployment):
            await _write(client, workflow_id, merged, replace=True)
        return


def disagreement(mine: SharedSettings, theirs: SharedSettings) -> str | None:
    """What this process's settings contradict in the record, in one line; None when they fit."""
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
    return None


async def _read(client: Client, workflow_id: str) -> SharedSettings | None:
    try:
        description = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    if description.status != WorkflowExecutionStatus.RUNNING:
        return None  # terminated to start afresh
    value = as_object((await description.memo()).get(_MEMO_KEY))
    if not value:
        return None
    try:
        return SharedSettings(**value)
    except TypeError:  # a record another version of this package wrote: start afresh
        return None


async def _write(client: Client, workflow_id: str, settings: SharedSettings, *, replace: bool) -> bool:
    """Whether the record is now ours; False when another process wrote one first."""
    try:
        await client.start_workflow(
            RECORD_TYPE,
            id=workflow_id,
            task_queue=RECORD_QUEUE,
            memo={_MEMO_KEY: asdict(settings)},
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING
            if replace
            else WorkflowIDConflictPolicy.FAIL,
            static_summary="the settings every mcp-tasks-temporal process of this task queue shares",
        )
    except WorkflowAlreadyStartedError:
        return False
    return True


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
