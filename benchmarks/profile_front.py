"""Where the front server's CPU goes while it serves one kind of request: py-spy on `mcp-tasks-temporal serve`.

    .venv/bin/python -m benchmarks.profile_front [--op create|get|get-working|greet|inline] [--seconds S] [--clients N]

Needs py-spy (`.venv/bin/pip install py-spy`; not a project dependency). It
starts the same stack as `benchmarks.throughput` (dev server, worker and front
as subprocesses), drives one operation over HTTP from N clients for S seconds
while py-spy samples the front's Python threads, and prints:

* the front's CPU per request, split into Python (sampled by py-spy) and the
  rest of the process, which is mostly the temporalio Rust core's own threads;
* the Python samples by the layer that spent them: each sample goes to the
  innermost frame that is ours (`mcp_tasks_temporal`), the MCP SDK, the HTTP
  server (uvicorn, starlette, sse-starlette) or the temporalio client, so
  pydantic, json and asyncio work is charged to whichever layer called it;
* the same samples by the library of the frame itself (self time), and the top
  functions by self time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

from tests.wire import HttpMcp, TaskCalls

from ._common import (
    cpu_seconds,
    http_client,
    load_average,
    machine,
    positive_int,
    product_stack,
    render,
    run_main,
    start_child,
)

SHORT_TOOL: Final = {"seconds": 0.1, "label": "profile"}
LONG_TOOL: Final = {"seconds": 3600, "label": "profile"}
ZERO_TOOL: Final = {"seconds": 0, "label": "profile"}
SAMPLE_RATE = 250
# Innermost match wins; the order only matters for paths that would match two entries.
LAYERS: Final = (
    ("ours (mcp_tasks_temporal)", "/mcp_tasks_temporal/"),
    ("MCP SDK (mcp, mcp_types)", "/site-packages/mcp/"),
    ("MCP SDK (mcp, mcp_types)", "/site-packages/mcp_types/"),
    ("HTTP server (uvicorn, starlette, sse-starlette, h11)", "/site-packages/uvicorn/"),
    ("HTTP server (uvicorn, starlette, sse-starlette, h11)", "/site-packages/starlette/"),
    ("HTTP server (uvicorn, starlette, sse-starlette, h11)", "/site-packages/sse_starlette/"),
    ("HTTP server (uvicorn, starlette, sse-starlette, h11)", "/site-packages/h11/"),
    ("HTTP server (uvicorn, starlette, sse-starlette, h11)", "/site-packages/httptools/"),
    ("temporalio client (Python side)", "/site-packages/temporalio/"),
)
LIBRARIES: Final = (
    "mcp_tasks_temporal",
    "mcp_types",
    "mcp",
    "pydantic_core",
    "pydantic",
    "temporalio",
    "google/protobuf",
    "uvicorn",
    "starlette",
    "sse_starlette",
    "h11",
    "httptools",
    "anyio",
    "asyncio",
    "json",
    "logging",
)
# Samples whose innermost frame is one of these are a thread waiting, not working; py-spy cannot tell
# idle from busy here (no idle detection in this container), so they are dropped by name.
IDLE_LEAVES: Final = frozenset(
    {"EpollSelector.select", "Condition.wait", "Event.wait", "Thread.join", "_wait_for_tstate_lock", "sleep"}
)
# The process's entry frames sit under every sample of the main thread; they are not where work happens.
ENTRY_FILES: Final = ("/mcp_tasks_temporal/__main__.py", "/mcp_tasks_temporal/cli.py")
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*):\d+\)$")


def layer_of(path: str) -> str | None:
    for name, marker in LAYERS:
        if marker in path:
            return name
    return None


def library_of(path: str) -> str:
    for name in LIBRARIES:
        if f"/{name}/" in path or path.endswith(f"/{name}.py"):
            return name
    return "other (stdlib, builtins)"


def parse_frame(frame: str) -> tuple[str, str]:
    match = _FRAME.match(frame)
    return (match.group("func"), match.group("file")) if match else (frame, "")


@dataclass
class Profile:
    by_layer: Counter[str] = field(default_factory=Counter[str])
    by_library: Counter[str] = field(default_factory=Counter[str])
    by_function: Counter[str] = field(default_factory=Counter[str])
    busy: int = 0
    idle: int = 0


def analyse(raw: str) -> Profile:
    """Busy samples by attributed layer, by library (self) and by function (self), from py-spy's raw output."""
    profile = Profile()
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [parse_frame(frame) for frame in stack.split(";")]
        func, path = frames[-1]
        if func in IDLE_LEAVES:
            profile.idle += count
            continue
        profile.busy += count
        app = [path for _, path in frames if not path.endswith(ENTRY_FILES)]
        layer = next((name for path in reversed(app) if (name := layer_of(path))), "event loop, no app frame")
        profile.by_layer[layer] += count
        profile.by_library[library_of(path)] += count
        profile.by_function[f"{func} ({_short(path)})"] += count
    return profile


def _short(path: str) -> str:
    for marker in ("/site-packages/", "/src/", "/lib/python3"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


# --- driving the front -----------------------------------------------------------------------------


async def operation(mcp: TaskCalls, op: str) -> Callable[[], Awaitable[Any]]:
    if op == "greet":
        return lambda: mcp.call_tool("greet", {"name": "profile"})
    if op == "create":
        return lambda: mcp.call_tool("slow_compute", SHORT_TOOL)
    if op == "inline":
        return lambda: mcp.call_tool("slow_compute", ZERO_TOOL)
    if op == "get-working":
        # A running task: each read is a `describe` of its workflow, its tool's heartbeat details included.
        running = (await mcp.call_tool("slow_compute", LONG_TOOL)).result
        return lambda: mcp.get(running["taskId"])
    created = (await mcp.call_tool("slow_compute", SHORT_TOOL)).result
    task_id = created["taskId"]
    with anyio.fail_after(60):
        while (await mcp.get(task_id)).result["status"] != "completed":
            await anyio.sleep(0.1)
    return lambda: mcp.get(task_id)


async def drive(call: Callable[[], Awaitable[Any]], clients: int, seconds: float) -> int:
    done = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await call()
            done += 1

    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(client)
    return done


async def profile(op: str, clients: int, seconds: float, keep: Path | None) -> None:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not await anyio.Path(py_spy).exists():
        raise SystemExit("py-spy is not installed: .venv/bin/pip install py-spy")
    # `inline` is a 0 s tool answered in the call (the default budget); the others never wait for a tool.
    budget_ms = None if op == "inline" else 0
    async with product_stack("mcp-tasks-profile-", max_inline_budget_ms=budget_ms) as stack, http_client() as http:
        mcp = TaskCalls(HttpMcp(stack.url, http))
        call = await operation(mcp, op)
        for _ in range(20):
            await call()
        out = stack.state_dir / "front.raw"
        command = [py_spy, "record", "--pid", str(stack.front.pid), "--rate", str(SAMPLE_RATE), "--format", "raw"]
        command += ["--full-filenames", "--duration", str(int(seconds)), "--output", str(out)]
        spy = await start_child("py-spy", command, stack.state_dir)
        try:
            await anyio.sleep(1.0)  # py-spy attaches
            cpu_before, wall_before = cpu_seconds(stack.front.pid), time.perf_counter()
            done = await drive(call, clients, seconds - 1.5)
            front_cpu = cpu_seconds(stack.front.pid) - cpu_before
            wall = time.perf_counter() - wall_before
            with anyio.fail_after(30):
                await spy.process.wait()
        finally:
            await spy.stop()
        raw = await anyio.Path(out).read_text() if await anyio.Path(out).exists() else ""
        if keep is not None:
            await anyio.Path(keep).write_text(raw)
    report(op, clients, done, wall, front_cpu, raw)


def report(op: str, clients: int, done: int, wall: float, front_cpu: float, raw: str) -> None:
    profile = analyse(raw)
    if not done or not profile.busy:
        print("no requests or no samples")
        return
    cpu_ms = 1000 * front_cpu / done
    print(f"\n{op}: {done} requests in {wall:.1f} s from {clients} clients ({done / wall:.1f}/s)")
    print(
        f"front CPU (/proc, all threads): {cpu_ms:.2f} ms per request, {100 * front_cpu / wall:.0f}% of one core;"
        f" py-spy: {profile.busy} busy samples of Python threads ({profile.idle} idle ones dropped)."
        " ms below = share x front CPU per request: an estimate, since under CPU contention a sample"
        " sees a runnable thread as busy whether or not it had the CPU"
    )

    def rows(counter: Counter[str], limit: int | None = None) -> list[tuple[str, str, str]]:
        return [
            (name, f"{100 * count / profile.busy:.1f}%", f"{cpu_ms * count / profile.busy:.2f}")
            for name, count in counter.most_common(limit)
        ]

    print()
    print(
        render(
            ("attributed to (innermost app frame)", "share of busy samples", "~CPU ms/request"), rows(profile.by_layer)
        )
    )
    print()
    print(render(("library of the frame itself (self time)", "share", "~CPU ms/request"), rows(profile.by_library)))
    print()
    print(render(("top functions, self time", "share", "~CPU ms/request"), rows(profile.by_function, 20)))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profile_front", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--op", choices=("create", "get", "get-working", "greet", "inline"), default="create")
    parser.add_argument("--seconds", type=positive_int, default=15, help="length of the py-spy recording")
    parser.add_argument("--clients", type=positive_int, default=8, help="concurrent HTTP clients")
    parser.add_argument("--raw", type=Path, default=None, help="also keep py-spy's raw (collapsed) stacks here")
    return parser.parse_args(argv)


async def amain(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    print("\n".join(machine()))
    print(
        f"profiling pid of `mcp-tasks-temporal serve` with py-spy at {SAMPLE_RATE} Hz; os pid {os.getpid()} drives it"
    )
    started = time.perf_counter()
    await profile(args.op, args.clients, float(max(args.seconds, 3)), args.raw)
    print(f"load average at end (1/5/15 min): {load_average()}")
    print(f"\ntotal run time: {time.perf_counter() - started:.1f} s")


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
