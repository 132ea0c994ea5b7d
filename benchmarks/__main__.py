"""Run the benchmarks in sequence: reads, workflow_reads, agent_turns, push, throughput, memory, peers,
round_trips, codec, dev_layout, fairness.

    .venv/bin/python -m benchmarks [--quick | --smoke [--jobs N]] [--only NAME ...]

Each benchmark runs as its own subprocess (its own dev server, worker and front),
bounded by a deadline. A benchmark past its deadline, or a Ctrl-C here, gets
SIGINT, so it tears down what it started; SIGKILL follows only if it does not
exit within a grace period. One benchmark failing does not stop the next.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

from ._common import REPO_ROOT, machine


@dataclass(frozen=True)
class Benchmark:
    name: str
    quick_deadline_s: float
    full_deadline_s: float
    smoke_deadline_s: float = 120

    def deadline_s(self, mode: str | None) -> float:
        if mode == "--smoke":
            return self.smoke_deadline_s
        return self.quick_deadline_s if mode == "--quick" else self.full_deadline_s


# Smoke deadlines are several times a smoke run on a loaded 2-core machine: start-up dominates there.
BENCHMARKS: Final = (
    Benchmark("reads", quick_deadline_s=200, full_deadline_s=300),
    Benchmark("workflow_reads", quick_deadline_s=120, full_deadline_s=200),
    Benchmark("agent_turns", quick_deadline_s=180, full_deadline_s=400),
    Benchmark("push", quick_deadline_s=270, full_deadline_s=660, smoke_deadline_s=180),
    Benchmark("throughput", quick_deadline_s=230, full_deadline_s=660),
    Benchmark("memory", quick_deadline_s=240, full_deadline_s=1200),
    # Its first full or quick run may install mcp-agent's venv (1-2 minutes); --smoke never installs.
    Benchmark("peers", quick_deadline_s=600, full_deadline_s=1800, smoke_deadline_s=180),
    Benchmark("round_trips", quick_deadline_s=240, full_deadline_s=240),
    Benchmark("codec", quick_deadline_s=150, full_deadline_s=400),
    Benchmark("dev_layout", quick_deadline_s=200, full_deadline_s=600, smoke_deadline_s=180),
    Benchmark("fairness", quick_deadline_s=360, full_deadline_s=900),
)
GRACE_S = 60.0


def run(benchmark: Benchmark, mode: str | None, *, beside: int = 0) -> tuple[int | None, float]:
    """The benchmark's exit code (None: it ran out of time) and its run time.

    Alone, its output goes straight to ours; `beside` others, it is kept and printed in one piece at its end,
    and its deadline stretches with the cores it shares.
    """
    alone = beside == 0
    command = [sys.executable, "-m", f"benchmarks.{benchmark.name}", *([mode] if mode else [])]
    deadline = benchmark.deadline_s(mode) * (1 + beside)
    banner = f"\n===== {' '.join(command[1:])} (deadline {deadline:g} s) ====="
    if alone:
        print(banner, flush=True)
    output = None if alone else tempfile.TemporaryFile()
    started = time.perf_counter()
    # Its own process group, so the terminal's Ctrl-C reaches it only through us, once.
    child = subprocess.Popen(command, cwd=REPO_ROOT, start_new_session=True, stdout=output, stderr=output)
    with _lock:
        _running.add(child)
    try:
        try:
            return child.wait(timeout=deadline), time.perf_counter() - started
        except subprocess.TimeoutExpired:
            print(f"\n{benchmark.name}: past its {deadline:g} s deadline; interrupting it", flush=True)
            _interrupt(child)
            return None, time.perf_counter() - started
    finally:
        with _lock:
            _running.discard(child)
        if output is not None:
            output.seek(0)
            with _lock:
                print(banner, flush=True)
                sys.stdout.buffer.write(output.read())
                sys.stdout.flush()
            output.close()


_lock = threading.Lock()
_running: set[subprocess.Popen[bytes]] = set()


def run_all(chosen: Sequence[Benchmark], mode: str | None, jobs: int) -> list[tuple[str, int | None, float]]:
    if jobs == 1:
        return [(b.name, *run(b, mode)) for b in chosen]
    # Side by side, the longest (by deadline) start first, so none is left to run alone at the end; the
    # summary keeps the chosen order.
    started_first = sorted(chosen, key=lambda b: -b.deadline_s(mode))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {b.name: pool.submit(run, b, mode, beside=jobs - 1) for b in started_first}
        try:
            return [(b.name, *futures[b.name].result()) for b in chosen]
        except KeyboardInterrupt:
            for future in futures.values():
                future.cancel()
            with _lock:
                running = list(_running)
            for child in running:
                _interrupt(child)
            raise


def _interrupt(child: subprocess.Popen[bytes]) -> None:
    """SIGINT lets the benchmark's finally blocks stop its processes; SIGKILL only if that hangs."""
    try:
        os.killpg(child.pid, signal.SIGINT)
        child.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    except ProcessLookupError:
        pass


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0])
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help="each benchmark's --quick")
    modes.add_argument(
        "--smoke", action="store_true", help="each benchmark's --smoke: a tiny run proving it still works (CI)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="run N benchmarks at once (each one's output printed whole when it ends); for --smoke, whose "
        "figures mean nothing anyway: measurements taken side by side disturb each other",
    )
    parser.add_argument(
        "--only", nargs="+", choices=[b.name for b in BENCHMARKS], default=None, help="run just these, in this order"
    )
    args = parser.parse_args(argv)
    # A background shell start leaves SIGINT ignored, and children would inherit that; SIGTERM
    # (a CI stop, a `kill`) takes the same way out as Ctrl-C, through `_interrupt`.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    mode = "--smoke" if args.smoke else "--quick" if args.quick else None
    chosen = [b for name in args.only for b in BENCHMARKS if b.name == name] if args.only else list(BENCHMARKS)
    print("\n".join(machine()))
    started = time.perf_counter()
    if args.jobs < 1 or (args.jobs > 1 and not args.smoke):
        parser.error("--jobs above 1 only with --smoke: benchmarks run side by side measure each other")
    try:
        outcomes = run_all(chosen, mode, args.jobs)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        raise SystemExit(130) from None
    print("\n===== summary =====")
    for name, code, seconds in outcomes:
        status = "timed out" if code is None else ("ok" if code == 0 else f"exit {code}")
        print(f"{name}: {status} in {seconds:.1f} s")
    print(f"all: {time.perf_counter() - started:.1f} s")
    if any(code != 0 for _, code, _ in outcomes):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
