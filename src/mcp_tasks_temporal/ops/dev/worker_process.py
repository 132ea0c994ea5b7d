"""`dev`'s worker in a process of its own.

On two cores the front answers faster when the tools run beside it rather than
in its event loop: measured on `dev`, a `tasks/get` of a working task took 16.7
ms p50 with the worker in its own process against 22.1 ms in one process, a
create 19.9 against 23.8 ms, and a short task was done end to end in 496
against 664 ms (docs/performance.md). So `dev` starts `mcp-tasks-temporal
worker` on its embedded Temporal with the worker options it was given, and
restarts it, with one line, if that worker dies.

The child ignores the `TEMPORAL_*` variables and the temporal CLI's config
file, which describe the user's cluster, not the server `dev` started; and it
stops by itself if `dev` is killed without a chance to stop it (the kernel's
parent-death signal where there is one, and its own check of its parent).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import Process

from mcp_tasks_temporal.ops.dev.child_process import log_since, open_log, stop_gracefully
from mcp_tasks_temporal.ops.dev.parent_death import stopped_with_parent
from mcp_tasks_temporal.ops.settings import environment
from mcp_tasks_temporal.ops.settings.processes import STOP_WITH_PARENT_ENV, DevSettings

PARENT_PID_ENV: Final = STOP_WITH_PARENT_ENV
"""Set for `dev`'s worker: the pid whose end stops it, so a `kill -9` of `dev` leaves no worker behind."""

READY_LINE: Final = "mcp-tasks-temporal worker:"
"""The first words of the line a worker prints on stderr once it polls its task queues."""

_PARENT_CHECK_S = 1.0
TEMPORAL_GONE_GRACE_S: Final = 3.0
"""How long the worker may drain once `dev`'s Temporal has died: results and heartbeats cannot reach it."""


class DevWorkerError(RuntimeError):
    """`dev`'s worker could not start, or exited while `dev` was running."""


@dataclass
class DevWorker:
    process: Process
    log_path: Path
    log_start: int

    @property
    def pid(self) -> int:
        return self.process.pid

    async def exited(self) -> int:
        """Wait for the worker to exit; its exit status."""
        return await self.process.wait()


def worker_command(args: DevSettings, *, address: str, namespace: str) -> list[str]:
    """`mcp-tasks-temporal worker` with every worker option `dev` was given, on `dev`'s own Temporal."""
    log_level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    command = [sys.executable, "-m", "mcp_tasks_temporal", "--log-level", log_level, "worker"]
    command += ["--app", args.app, "--task-queue", args.task_queue, "--address", address, "--namespace", namespace]
    command += ["--max-concurrent-tools", str(args.max_concurrent_tools)]
    command += ["--max-cached-workflows", str(args.max_cached_workflows)]
    command += ["--graceful-shutdown", str(args.graceful_shutdown)]
    if args.agent_model:
        command += ["--agent-model", args.agent_model]
    if args.codec:
        command += ["--codec", args.codec]
    if args.codec_key_file is not None:
        command += ["--codec-key-file", str(args.codec_key_file.resolve())]
    command += args.storage().worker_args()
    if args.deployment_name or args.build_id:
        # dev's one build is the current one: its tasks run on it, pinned or not.
        command += ["--deployment-name", args.deployment_name or "", "--build-id", args.build_id or ""]
        command.append("--make-current")
    if args.otel:
        command.append("--otel")
    return command


def worker_environment() -> dict[str, str]:
    """This environment without what points a Temporal client at the user's cluster."""
    child = {name: value for name, value in environment().items() if not name.startswith("TEMPORAL_")}
    child["TEMPORAL_CONFIG_FILE"] = os.devnull
    child[PARENT_PID_ENV] = str(os.getpid())
    return child


async def _start(
    command: list[str], log_path: Path, *, startup_timeout_s: float, graceful_shutdown_s: float
) -> DevWorker:
    """A worker process, once it polls its task queues; stopped again if it cannot get there."""
    log_file, log_start = open_log(log_path)
    with log_file:
        # Its own session: Ctrl-C in the terminal reaches `dev`, which stops the worker in order.
        process = await anyio.open_process(
            stopped_with_parent(command),
            stdout=log_file,
            stderr=log_file,
            env=worker_environment(),
            start_new_session=True,
        )
    try:
        with anyio.fail_after(startup_timeout_s):
            while READY_LINE not in log_since(log_path, log_start):
                if process.returncode is not None:
                    raise DevWorkerError(_exit_line(process.returncode, log_path, log_start))
                with anyio.move_on_after(0.05):
                    await process.wait()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stop_gracefully(process, grace_s=graceful_shutdown_s)
        raise
    return DevWorker(process, log_path, log_start)


class SupervisedWorker:
    """`dev`'s worker, restarted when it dies, unless it keeps dying.

    A worker killed in the middle of a tool loses nothing: Temporal retries the
    tool on the next worker once its heartbeat is missed, so restarting is all
    it takes for tasks to carry on while the endpoint stays up. A worker that
    dies again and again (a tool that crashes the process, a broken deployment)
    is not restarted forever: past `MAX_RESTARTS` within `RESTART_WINDOW_S`,
    `dev` stops with the line that says why.
    """

    MAX_RESTARTS: Final = 3
    RESTART_WINDOW_S: Final = 60.0

    def __init__(self, command: list[str], *, log_path: Path, graceful_shutdown_s: float) -> None:
        self._command = command
        self._log_path = log_path
        self._grace_s = graceful_shutdown_s + 10
        self._restarts: list[float] = []
        self.current: DevWorker | None = None

    async def start(self, *, startup_timeout_s: float = 60.0) -> DevWorker:
        self.current = await _start(
            self._command, self._log_path, startup_timeout_s=startup_timeout_s, graceful_shutdown_s=self._grace_s
        )
        return self.current

    async def keep_running(self, on_restart: Callable[[str], None]) -> DevWorkerError:
        """Restart the worker each time it dies; the reason to stop once it should not be restarted."""
        while True:
            worker = self.current
            assert worker is not None, "start() first"
            code = await worker.exited()
            ended = exit_error(code, worker)
            now = time.monotonic()
            self._restarts = [at for at in self._restarts if now - at < self.RESTART_WINDOW_S]
            if len(self._restarts) >= self.MAX_RESTARTS:
                return DevWorkerError(
                    f"{ended}; it died {self.MAX_RESTARTS + 1} times within {self.RESTART_WINDOW_S:.0f}s"
                )
            self._restarts.append(now)
            self.current = None
            try:
                restarted = await self.start()
            except DevWorkerError as failed:
                return DevWorkerError(f"{ended}; restarting it failed: {failed}")
            on_restart(f"{ended}; restarted it (pid {restarted.pid})")

    async def stop(self, *, temporal_gone: bool = False) -> None:
        """SIGTERM and its graceful shutdown; with `temporal_gone`, only seconds: its tools could report nothing."""
        if self.current is not None:
            grace_s = min(self._grace_s, TEMPORAL_GONE_GRACE_S) if temporal_gone else self._grace_s
            await stop_gracefully(self.current.process, grace_s=grace_s)


@asynccontextmanager
async def dev_worker(
    args: DevSettings, *, address: str, namespace: str, log_path: Path, startup_timeout_s: float = 60.0
) -> AsyncGenerator[SupervisedWorker]:
    """Run the worker for the duration of the block; on exit it gets SIGTERM and its graceful shutdown."""
    command = worker_command(args, address=address, namespace=namespace)
    supervised = SupervisedWorker(command, log_path=log_path, graceful_shutdown_s=float(args.graceful_shutdown))
    await supervised.start(startup_timeout_s=startup_timeout_s)
    try:
        yield supervised
    finally:
        with anyio.CancelScope(shield=True):
            await supervised.stop()


def exit_error(code: int, worker: DevWorker) -> DevWorkerError:
    return DevWorkerError(_exit_line(code, worker.log_path, worker.log_start))


async def stop_with_parent(parent_pid: int) -> None:
    """Return once `parent_pid` is gone (this process was re-parented)."""
    while os.getppid() == parent_pid:
        await anyio.sleep(_PARENT_CHECK_S)


def _exit_line(code: int, log_path: Path, start: int) -> str:
    """How it ended, with the worker's own last line (it prints one line and no traceback), and its log."""
    ended = f"the worker was killed by signal {-code}" if code < 0 else f"the worker exited with code {code}"
    lines = [line for line in log_since(log_path, start).splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(READY_LINE)]
    why = f": {said[-1]}" if said else ""
    return f"{ended}{why} (log: {log_path})"
