"""One client cannot cost the others: another principal's reads under hostile listens, and bodies in flight.

    .venv/bin/python -m benchmarks.limits [--samples M] [--quick | --smoke]

One dev server, one worker, and fronts run as `serve` with a token file naming two
principals, `hostile` and `other` (the front's defaults otherwise). Three measurements:

- **Reads beside hostile listens.** `other` parks a `confirm_delete` task and reads
  it with `tasks/get`, one request at a time: M samples with nothing else going on,
  then M samples while `hostile` runs 12 listens at once, each naming 10,000 random
  task IDs, each opened again as soon as it ends (held for a second once acknowledged;
  refused ones, beyond the caller's limit, tried again after half a second). The ratio
  of the two p50s is the target (<= 1.5).
- **One hostile acknowledgement.** A single listen of 10,000 random IDs on an idle
  front: its acknowledgement time and the Temporal calls it made, by operation (the
  dev server's own counters).
- **Bodies in flight.** 150 `tools/call` requests of 1 MB each (`greet` with a 1 MB
  name) at once, against a front with the default ceiling on request bytes taken in
  at once (`--max-body-bytes-in-flight`, 32 MiB) and, in the same run, a front with it
  lifted: each front's RSS before and its peak during them (VmHWM, reset before), and
  how the requests ended (HTTP status).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import httpx

from mcp_tasks_temporal.temporal.ids import OWNER_SECRET_ENV
from tests.wire import Reply, base_headers, request_message, sse_frames

from ._common import (
    Child,
    Stack,
    free_port,
    http_client,
    load_average,
    machine,
    ms_since,
    percentile,
    positive_int,
    product_stack,
    render,
    rpc_delta,
    rss_mib,
    run_main,
    start_child,
)

TOKENS: Final = {"hostile-token": "hostile", "other-token": "other"}
HOSTILE_LISTENS: Final = 12
HOSTILE_IDS: Final = 10_000
HOLD_ACKED_S: Final = 1.0
RETRY_REFUSED_S: Final = 0.5
BODIES: Final = 150
BODY_BYTES: Final = 1_000_000
UNBOUNDED: Final = 1 << 40
TARGET_RATIO: Final = 1.5
DEFAULT_SAMPLES: Final = 200
QUICK_SAMPLES: Final = 60
SMOKE_SAMPLES: Final = 5
ELICITATION: Final[dict[str, Any]] = {"elicitation": {}}


@dataclass
class Results:
    idle_ms: list[float] = field(default_factory=list[float])
    hostile_ms: list[float] = field(default_factory=list[float])
    other_errors: int = 0
    listens: Counter[str] = field(default_factory=Counter[str])
    """How the hostile listens ended: acknowledged, or refused with which code."""
    ack_s: float = 0.0
    ack_rpcs: dict[str, float] = field(default_factory=dict[str, float])
    bodies: dict[str, tuple[float, float, Counter[int]]] = field(
        default_factory=dict[str, tuple[float, float, Counter[int]]]
    )
    """By front: RSS before and peak (MiB), and the HTTP statuses the 150 requests ended with."""


def headers(method: str, token: str, name: str | None = None) -> dict[str, str]:
    return {**base_headers(method, name), "authorization": f"Bearer {token}"}


async def start_front(stack: Stack, tokens: Path, name: str, *extra: str) -> tuple[Child, str]:
    port = free_port()
    command = [sys.executable, "-m", "mcp_tasks_temporal", "serve", "--temporal", stack.temporal_address]
    command += ["--task-queue", stack.task_queue, "--app", "mcp_tasks_temporal.testing.conformance:app"]
    command += ["--port", str(port), "--tokens", str(tokens), *extra]
    front = await start_child(name, command, stack.state_dir)
    # The MCP endpoint wants a token; the readiness probe does not.
    async with httpx.AsyncClient(timeout=2) as http:
        with anyio.fail_after(60):
            while True:
                await front.check_alive()
                try:
                    if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await anyio.sleep(0.1)
    return front, f"http://127.0.0.1:{port}/mcp"


async def parked_task(http: httpx.AsyncClient, url: str, token: str) -> str:
    """A `confirm_delete` task of the token's principal, once it waits for its answer."""
    params = {"name": "confirm_delete", "arguments": {"filename": "x"}}
    message = request_message(1, "tools/call", params, capabilities=ELICITATION)
    reply = Reply.of(await http.post(url, json=message, headers=headers("tools/call", token, "confirm_delete")))
    task_id = str(reply.result["taskId"])
    with anyio.fail_after(120):
        while (await read(http, url, token, task_id))[1].get("status") != "input_required":
            await anyio.sleep(0.2)
    return task_id


async def read(http: httpx.AsyncClient, url: str, token: str, task_id: str) -> tuple[float, dict[str, Any]]:
    """One `tasks/get`: how long it took (ms) and the task (or the error)."""
    message = request_message(1, "tasks/get", {"taskId": task_id})
    started = time.perf_counter()
    reply = Reply.of(await http.post(url, json=message, headers=headers("tasks/get", token, task_id)))
    return ms_since(started), reply.body.get("result") or reply.body


async def samples(http: httpx.AsyncClient, url: str, task_id: str, count: int, into: list[float]) -> int:
    errors = 0
    for _ in range(count):
        took, task = await read(http, url, "other-token", task_id)
        if task.get("status") == "input_required":
            into.append(took)
        else:
            errors += 1
    return errors


async def hostile_listen(http: httpx.AsyncClient, url: str, results: Results, request_id: int) -> float:
    """One listen of random IDs, held a moment once acknowledged; its acknowledgement time (s)."""
    ids = [str(uuid.uuid4()) for _ in range(HOSTILE_IDS)]
    message = request_message(request_id, "subscriptions/listen", {"notifications": {"taskIds": ids}})
    started = time.perf_counter()
    async with http.stream(
        "POST", url, content=json.dumps(message), headers=headers("subscriptions/listen", "hostile-token")
    ) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            body = json.loads(await response.aread())
            results.listens[f"refused {body.get('error', {}).get('code')} (HTTP {response.status_code})"] += 1
            await anyio.sleep(RETRY_REFUSED_S)
            return 0.0
        async for frame in sse_frames(response):
            if frame.get("method") == "notifications/subscriptions/acknowledged":
                acked = time.perf_counter() - started
                results.listens["acknowledged"] += 1
                await anyio.sleep(HOLD_ACKED_S)
                return acked
    results.listens["ended before its ack"] += 1
    return 0.0


async def hostile(http: httpx.AsyncClient, url: str, results: Results, stop: anyio.Event) -> None:
    async def one(worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            await hostile_listen(http, url, results, worker * 1_000_000 + n)

    async with anyio.create_task_group() as group:
        for worker in range(HOSTILE_LISTENS):
            group.start_soon(one, worker)
        await stop.wait()
        group.cancel_scope.cancel()


async def one_ack(stack: Stack, http: httpx.AsyncClient, url: str, results: Results) -> None:
    if stack.metrics is None:
        return
    before = await stack.metrics.requests(http)
    listens = Results()
    results.ack_s = await hostile_listen(http, url, listens, 1)
    results.ack_rpcs = rpc_delta(before, await stack.metrics.requests(http))


def reset_peak_rss(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def bodies(front: Child, url: str, results: Results, name: str) -> None:
    """150 requests of 1 MB at once, each on a connection of its own."""
    text = "x" * BODY_BYTES
    message = json.dumps(request_message(1, "tools/call", {"name": "greet", "arguments": {"name": text}}))
    async with http_client(BODIES + 8) as http:
        # One first: what the front allocates once for the path is not the bodies' cost.
        await http.post(url, content=message, headers=headers("tools/call", "other-token", "greet"))
        await anyio.sleep(1.0)
        before = rss_mib(front.pid)
        reset_peak_rss(front.pid)
        statuses: Counter[int] = Counter()

        async def send() -> None:
            response = await http.post(url, content=message, headers=headers("tools/call", "other-token", "greet"))
            statuses[response.status_code] += 1

        async with anyio.create_task_group() as group:
            for _ in range(BODIES):
                group.start_soon(send)
        results.bodies[name] = (before, peak_rss_mib(front.pid), statuses)


async def run(count: int) -> Results:
    results = Results()
    # Fronts with tokens need the deployment's owner secret, and its worker the same one: every child inherits it.
    os.environ.setdefault(OWNER_SECRET_ENV, secrets.token_urlsafe(32))
    async with product_stack("mcp-tasks-limits-") as stack, http_client(64) as http:
        tokens = stack.state_dir / "tokens"
        tokens.write_text("".join(f"{token} {principal}\n" for token, principal in TOKENS.items()))
        front, url = await start_front(stack, tokens, "front-limited")
        task_id = await parked_task(http, url, "other-token")
        await samples(http, url, task_id, 10, [])  # warm-up
        results.other_errors += await samples(http, url, task_id, count, results.idle_ms)
        print(f"  other's tasks/get, idle: p50 {percentile(results.idle_ms, 50):.1f} ms; load {load_average()}")
        await one_ack(stack, http, url, results)
        print(f"  one listen of {HOSTILE_IDS:,} random IDs acknowledged in {results.ack_s:.2f} s")
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(hostile, http, url, results, stop)
            await anyio.sleep(3.0)  # the hostile listens under way
            results.other_errors += await samples(http, url, task_id, count, results.hostile_ms)
            stop.set()
        busy = percentile(results.hostile_ms, 50)
        print(f"  other's tasks/get beside hostile listens: p50 {busy:.1f} ms; load {load_average()}")
        await bodies(front, url, results, "default ceiling (32 MiB)")
        await front.stop()
        unbounded, unbounded_url = await start_front(
            stack, tokens, "front-unbounded", "--max-body-bytes-in-flight", str(UNBOUNDED)
        )
        await bodies(unbounded, unbounded_url, results, "ceiling lifted")
        await unbounded.stop()
    return results


def report(results: Results) -> str:
    idle, busy = percentile(results.idle_ms, 50), percentile(results.hostile_ms, 50)
    ratio = busy / idle if idle else float("nan")
    rows = [
        (
            "other's tasks/get, idle",
            str(len(results.idle_ms)),
            f"{idle:.1f}",
            f"{percentile(results.idle_ms, 99):.1f}",
            "",
        ),
        (
            f"other's tasks/get beside {HOSTILE_LISTENS} hostile listens of {HOSTILE_IDS:,} random IDs",
            str(len(results.hostile_ms)),
            f"{busy:.1f}",
            f"{percentile(results.hostile_ms, 99):.1f}",
            f"{ratio:.2f}",
        ),
    ]
    lines = [render(("reads", "n", "p50 ms", "p99 ms", "ratio to idle"), rows)]
    verdict = "met" if ratio <= TARGET_RATIO else "missed"
    lines.append(f"target: ratio <= {TARGET_RATIO}: {verdict}; errors on other's reads: {results.other_errors}")
    lines.append("hostile listens: " + ", ".join(f"{what} x{n}" for what, n in sorted(results.listens.items())))
    calls = ", ".join(f"{op} {n:.0f}" for op, n in sorted(results.ack_rpcs.items()))
    lines.append(
        f"one listen of {HOSTILE_IDS:,} random IDs: acknowledged in {results.ack_s:.2f} s; Temporal calls: {calls}"
    )
    body_rows = [
        (
            name,
            f"{before:.1f}",
            f"{peak:.1f}",
            f"{peak - before:+.1f}",
            ", ".join(f"HTTP {status} x{n}" for status, n in sorted(statuses.items())),
        )
        for name, (before, peak, statuses) in results.bodies.items()
    ]
    lines.append(
        render((f"{BODIES} bodies of 1 MB at once", "RSS before MiB", "peak MiB", "growth MiB", "answers"), body_rows)
    )
    return "\n".join(lines)


async def amain(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.limits", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--samples", type=positive_int, default=None, help=f"reads per phase (default {DEFAULT_SAMPLES})"
    )
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK_SAMPLES} reads per phase")
    modes.add_argument("--smoke", action="store_true", help=f"{SMOKE_SAMPLES} reads per phase: proves it runs")
    args = parser.parse_args(argv)
    count = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    print("\n".join(machine()))
    started = time.perf_counter()
    results = await run(count)
    print()
    print(report(results))
    print(f"\nload average at the end: {load_average()}; total run time: {time.perf_counter() - started:.1f} s")


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
