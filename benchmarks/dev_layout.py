"""`dev` with its worker in a process of its own against `dev --in-process-worker`, what the front answers.

    .venv/bin/python -m benchmarks.dev_layout [--rounds N] [--samples N] [--quick | --smoke]

Each round starts `dev` once per layout, one after the other (alternating, so drift on the machine hits both),
on the conformance fixture app. Per layout: create and `tasks/get` of a working task, sample by sample in
turn while short tasks finish in the background (the worker busy, as in real use); creates per second from
10 clients; and the end-to-end time of a short task (create, poll until completed) with 10 clients at once.
The figures are medians over the rounds. `dev` keeps the layout whose front answers faster.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio

from tests.wire import HttpMcp, TaskCalls

from ._common import (
    CONFORMANCE_APP,
    HOST,
    Child,
    free_port,
    http_client,
    load_average,
    machine,
    percentile,
    positive_int,
    render,
    run_main,
    start_child,
)
from .peer_servers import CONFIRM, ELICITATION
from .peers import sustained
from .throughput import LONG_TOOL, SlowComputeTasks

LAYOUTS: Final = {"worker process": [], "in-process worker": ["--in-process-worker"]}
CLIENTS: Final = 10
DEFAULT_ROUNDS, QUICK_ROUNDS = 3, 1
DEFAULT_SAMPLES, QUICK_SAMPLES = 100, 30
DEFAULT_PHASE_S, QUICK_PHASE_S = 5.0, 3.0
DEFAULT_TASKS_PER_CLIENT, QUICK_TASKS_PER_CLIENT = 8, 3
SMOKE_SAMPLES, SMOKE_PHASE_S, SMOKE_TASKS_PER_CLIENT = 3, 0.5, 1
DEV_STOP_S: Final = 60.0
DEV_START_ATTEMPTS: Final = 3


@dataclass
class Layout:
    name: str
    create_ms: list[float] = field(default_factory=list[float])
    get_ms: list[float] = field(default_factory=list[float])
    creates_per_s: list[float] = field(default_factory=list[float])
    end_to_end_ms: list[float] = field(default_factory=list[float])


@dataclass(frozen=True)
class Settings:
    samples: int
    phase_s: float
    tasks_per_client: int


@asynccontextmanager
async def dev(flags: list[str]) -> AsyncGenerator[str]:
    """A `dev` on free ports in a scratch state directory; its MCP endpoint."""
    for attempt in range(1, DEV_START_ATTEMPTS + 1):
        # Errors removing the directory are ignored: a `dev` that had to be killed leaves its Temporal server to
        # stop on its own (it gets SIGTERM with its parent's death), still writing its log and database there.
        with tempfile.TemporaryDirectory(prefix="bench-dev-layout-", ignore_cleanup_errors=True) as tmp:
            port = free_port()
            command = [sys.executable, "-m", "mcp_tasks_temporal", "dev", "--app", CONFORMANCE_APP, *flags]
            command += ["--port", str(port), "--temporal-port", str(free_port()), "--ui-port", "0"]
            command += ["--state-dir", tmp, "--max-inline-budget-ms", "0"]  # tasks, however quick their tools
            child = await start_child("dev", command, Path(tmp))
            try:
                if not await _started(child, last_attempt=attempt == DEV_START_ATTEMPTS):
                    continue
                yield f"http://{HOST}:{port}/mcp"
                return
            finally:
                # `dev` stops its worker, then its Temporal server: seconds, several times that on a loaded machine.
                await child.stop(timeout_s=DEV_STOP_S)


async def _started(child: Child, *, last_attempt: bool) -> bool:
    """Whether `dev` came up; False when it lost a port to another process and may be tried again."""
    with anyio.fail_after(90):
        while "Press Ctrl-C to stop." not in await child.log():
            try:
                await child.check_alive()
            except RuntimeError as exited:
                # Ports are picked free, then bound by the child: another benchmark's servers may take one between.
                if "already in use" in str(exited) and not last_attempt:
                    print(f"dev lost a port race, starting it again:\n{exited}", flush=True)
                    return False
                raise
            await anyio.sleep(0.1)
    return True


@dataclass
class PreparedTasks(SlowComputeTasks):
    """`slow_compute` tasks through one front, with a task in each state beside them."""

    running: str = ""
    waiting: str = ""
    done: str = ""

    async def prepare(self) -> None:
        """A task in each state: working (an hour-long tool), input_required, completed."""
        self.running = await self.create(LONG_TOOL)
        asked = (await self.mcp.call_tool("confirm_delete", CONFIRM, capabilities=ELICITATION)).result
        self.waiting = str(asked["taskId"])
        self.done = await self.create()
        await self.until(self.running, lambda task: task["status"] == "working")
        await self.until(self.waiting, lambda task: task["status"] == "input_required")
        await self.until(self.done, lambda task: task["status"] == "completed")

    async def release(self) -> None:
        for task_id in (self.running, self.waiting):
            _ = (await self.mcp.cancel(task_id)).result


async def measure(url: str, layout: Layout, settings: Settings) -> None:
    async with http_client(2 * CLIENTS) as http:
        server = PreparedTasks(TaskCalls(HttpMcp(url, http)))
        await server.prepare()
        creates: list[float] = []
        gets: list[float] = []
        for _ in range(settings.samples):
            started = time.perf_counter()
            await server.create()
            creates.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await server.get(server.running)
            gets.append((time.perf_counter() - started) * 1000)
        layout.create_ms.append(percentile(creates, 50))
        layout.get_ms.append(percentile(gets, 50))
        layout.creates_per_s.append(await sustained(server.create, settings.phase_s, CLIENTS))
        end_to_end: list[float] = []

        async def client() -> None:
            for _ in range(settings.tasks_per_client):
                started = time.perf_counter()
                task_id = await server.create()
                await server.until(task_id, lambda task: task["status"] == "completed")
                end_to_end.append((time.perf_counter() - started) * 1000)

        async with anyio.create_task_group() as group:
            for _ in range(CLIENTS):
                group.start_soon(client)
        layout.end_to_end_ms.append(percentile(end_to_end, 50))
        await server.release()


def report(layouts: list[Layout]) -> str:
    separate, single = layouts
    figures: list[tuple[str, Callable[[Layout], list[float]], bool]] = [
        ("create p50 ms", lambda layout: layout.create_ms, True),
        ("tasks/get working p50 ms", lambda layout: layout.get_ms, True),
        (f"creates/s, {CLIENTS} clients", lambda layout: layout.creates_per_s, False),
        (f"short task end to end p50 ms, {CLIENTS} clients", lambda layout: layout.end_to_end_ms, True),
    ]
    rows: list[list[str]] = []
    faster_front = True
    for label, pick, lower_is_better in figures:
        mine, theirs = statistics.median(pick(separate)), statistics.median(pick(single))
        ratio = mine / theirs
        better = ratio <= 1 if lower_is_better else ratio >= 1
        if label.startswith(("create", "tasks/get")):
            faster_front = faster_front and better
        rows.append([label, f"{mine:.1f}", f"{theirs:.1f}", f"{ratio:.2f}", "better" if better else "worse"])
    table = render(["", separate.name, single.name, "ratio", "worker process is"], rows)
    kept = separate.name if faster_front else single.name
    verdict = "met" if faster_front else "missed: the default should be the in-process worker"
    return f"{table}\n\nthe front answers faster with the {kept} (dev's default is the worker process: {verdict})"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.dev_layout", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--rounds", type=positive_int, default=None)
    parser.add_argument("--samples", type=positive_int, default=None)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} round of {QUICK_SAMPLES} samples")
    modes.add_argument(
        "--smoke", action="store_true", help=f"1 round of {SMOKE_SAMPLES} samples: proves it runs, in seconds"
    )
    return parser.parse_args(argv)


async def amain(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick or args.smoke else DEFAULT_ROUNDS)
    if args.smoke:
        settings = Settings(args.samples or SMOKE_SAMPLES, SMOKE_PHASE_S, SMOKE_TASKS_PER_CLIENT)
    else:
        settings = Settings(
            samples=args.samples or (QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES),
            phase_s=QUICK_PHASE_S if args.quick else DEFAULT_PHASE_S,
            tasks_per_client=QUICK_TASKS_PER_CLIENT if args.quick else DEFAULT_TASKS_PER_CLIENT,
        )
    print("\n".join(machine()))
    print(f"load average before: {load_average()}")
    print(f"{rounds} round(s); {settings.samples} samples per op; {settings.phase_s:g} s sustained", flush=True)
    layouts = [Layout(name) for name in LAYOUTS]
    for round_number in range(rounds):
        for layout, flags in zip(layouts, LAYOUTS.values(), strict=True):
            async with dev(flags) as url:
                await measure(url, layout, settings)
            print(
                f"round {round_number + 1}, {layout.name}: create {layout.create_ms[-1]:.1f} ms, "
                f"get {layout.get_ms[-1]:.1f} ms, {layout.creates_per_s[-1]:.0f} creates/s, "
                f"end to end {layout.end_to_end_ms[-1]:.0f} ms",
                flush=True,
            )
    print(report(layouts))
    print(f"load average after: {load_average()}")


def main(argv: list[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
