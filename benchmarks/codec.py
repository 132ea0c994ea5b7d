"""What payload encryption costs: task create and get with the AES-256-GCM codec against the same without it.

    .venv/bin/python -m benchmarks.codec [--samples N] [--quick | --smoke]

Self-contained: one Temporal dev server (SQLite file in a temp dir), two clients of
this process on it, one plain and one with the codec, each behind the front's own
`TemporalTaskGateway`. No worker runs, so a task stays `working` and a get is the
front's hot path (describe + memo decode). Plain and encrypted alternate sample by
sample, so drift on the machine hits both alike. The argument is a 4 KiB string, about
what a tool call with a file excerpt carries.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from temporalio.api.common.v1 import Payload

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, now_ms
from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal
from mcp_tasks_temporal.temporal.codec import AesGcmCodec
from mcp_tasks_temporal.temporal.connection import ConnectionOptions, connect
from mcp_tasks_temporal.temporal.contract import ToolTaskInput
from mcp_tasks_temporal.temporal.ids import new_task_id

from ._common import free_port, machine, ms_since, percentile, positive_int, render, run_main

DEFAULT_SAMPLES = 200
QUICK_SAMPLES = 20
SMOKE_SAMPLES = 3
WARMUP = 5
RATIO_TARGET: Final = 1.15
"""Encrypted p50 at most this many times plain: AES-GCM over a few KB is microseconds against a gRPC round trip."""
ARGUMENT: Final = "x" * 4096
QUEUE: Final = "bench-codec-unpolled"


def task_input() -> ToolTaskInput:
    return ToolTaskInput(
        task_id=new_task_id(),
        tool="bench",
        arguments={"text": ARGUMENT},
        meta={},
        created_at_ms=now_ms(),
        ttl_ms=3_600_000,
        poll_interval_ms=1000,
    )


async def sample(gateway: TemporalTaskGateway) -> tuple[float, float]:
    task = task_input()
    started = time.perf_counter()
    await gateway.create(task, None)
    create_ms = ms_since(started)
    started = time.perf_counter()
    await gateway.get(task.task_id, None)
    return create_ms, ms_since(started)


async def codec_only(samples: int) -> list[str]:
    """The codec alone, per payload, without Temporal."""
    codec = AesGcmCodec([secrets.token_bytes(32)])
    rows: list[str] = []
    for size in (1024, 64 * 1024, 1024 * 1024):
        payload = Payload(metadata={"encoding": b"json/plain"}, data=b"x" * size)
        started = time.perf_counter()
        for _ in range(samples):
            await codec.decode(await codec.encode([payload]))
        rows.append(f"{size // 1024} KiB: {ms_since(started) * 1000 / samples:.0f} µs per encode + decode")
    return rows


async def run(samples: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-codec-") as state_dir:
        async with embedded_temporal(state_dir=Path(state_dir), port=free_port(), ui_port=None) as server:
            options = ConnectionOptions(address=server.address, namespace=server.namespace)
            plain = TemporalTaskGateway(await connect(options, use_environment=False), task_queue=QUEUE)
            codec = AesGcmCodec([secrets.token_bytes(32), secrets.token_bytes(32)])
            encrypted = TemporalTaskGateway(
                await connect(options, codec=codec, use_environment=False), task_queue=QUEUE
            )
            for _ in range(WARMUP):
                await sample(plain)
                await sample(encrypted)
            timings: dict[str, list[tuple[float, float]]] = {"plain": [], "encrypted": []}
            for _ in range(samples):
                timings["plain"].append(await sample(plain))
                timings["encrypted"].append(await sample(encrypted))
    rows: list[list[str]] = []
    for column, name in ((0, "create"), (1, "get")):
        plain_ms = [t[column] for t in timings["plain"]]
        encrypted_ms = [t[column] for t in timings["encrypted"]]
        ratio = statistics.median(encrypted_ms) / statistics.median(plain_ms)
        rows.append(
            [
                name,
                f"{statistics.median(plain_ms):.2f} / {percentile(plain_ms, 95):.2f}",
                f"{statistics.median(encrypted_ms):.2f} / {percentile(encrypted_ms, 95):.2f}",
                f"{ratio:.2f}",
                f"≤ {RATIO_TARGET}: {'met' if ratio <= RATIO_TARGET else 'missed'}",
            ]
        )
    return rows


async def amain(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.codec", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=positive_int, default=None, help=f"default {DEFAULT_SAMPLES}")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK_SAMPLES} samples")
    modes.add_argument("--smoke", action="store_true", help=f"{SMOKE_SAMPLES} samples: proves it runs, in seconds")
    args = parser.parse_args(argv)
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    print("\n".join(machine()))
    print(f"samples: {samples} per variant, interleaved; argument {len(ARGUMENT)} bytes; no worker")
    started = time.perf_counter()
    rows = await run(samples)
    header = ["operation", "plain p50 / p95 ms", "encrypted p50 / p95 ms", "ratio p50", "target"]
    print()
    print(render(header, rows))
    print()
    print("\n".join(await codec_only(max(samples, 20))))
    print(f"\ntotal run time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    run_main(amain)
