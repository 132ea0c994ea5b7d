"""Where a pushed notification's time goes: each hop of one answered task, from the server's event times.

    .venv/bin/python -m benchmarks.push_probe [--tasks N] [--samples M] [--mode feed|poll]

One dev server, one worker and one front (`--mode`), N `confirm_delete` tasks parked in
`input_required` on one listen; M of them answered one at a time. For each, the hops
of its first change (`working`) are read back from the histories after the fact:

- update sent -> the task's signal recorded (HTTP, the front's read, the signal RPC);
- the signal -> the task's workflow task scheduled -> started (dispatch) -> completed (the worker);
- feed: completed -> the shard's publish signal recorded (the server's transfer queue); the shard's workflow
  task that takes the signal in (dispatch, the worker), which no front waits for;
- the last event on the path (the memo upsert, or the shard's signal) -> the notification read on the listen
  stream (the front's history long poll wakes).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from mcp_tasks_temporal.temporal.contract import as_object
from mcp_tasks_temporal.temporal.feed_contract import feed_shard, feed_workflow_id
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.wire import HttpMcp, TaskCalls

from ._common import http_client, load_average, machine, percentile, positive_int, product_stack, render, run_main
from .push import ANSWER, ListenStream
from .push_scale import create_parked

E = EventType


def _ms(event: HistoryEvent) -> float:
    return event.event_time.ToMilliseconds() + (event.event_time.nanos % 1_000_000) / 1e6


@dataclass
class Hops:
    by_name: dict[str, list[float]] = field(default_factory=dict[str, list[float]])

    def add(self, name: str, value: float) -> None:
        self.by_name.setdefault(name, []).append(value)


def _after(events: Sequence[HistoryEvent], kind: int, at_ms: float) -> HistoryEvent | None:
    return next((e for e in events if e.event_type == kind and _ms(e) >= at_ms), None)


def _published(event: HistoryEvent, workflow_id: str) -> list[Mapping[str, Any]]:
    """The transition items of `workflow_id` a shard's publish signal carried."""
    payloads = event.workflow_execution_signaled_event_attributes.input.payloads
    if not payloads:
        return []
    batch: dict[str, Any] = json.loads(payloads[0].data)
    items: list[Mapping[str, Any]] = []
    for entry in batch.get("items", []):
        value = as_object(json.loads(Payload.FromString(base64.b64decode(entry["data"])).data))
        if value.get("w") == workflow_id:
            items.append(value)
    return items


async def probe(tasks: int, samples: int, mode: str) -> Hops:
    os.environ["MCP_TASKS_PUSH"] = mode
    hops = Hops()
    async with product_stack("mcp-tasks-push-probe-") as stack, http_client() as http:
        mcp = TaskCalls(HttpMcp(stack.url, http))
        parked = await create_parked(stack, mcp, tasks + samples)
        stream = ListenStream(http, stack.url, [t.task_id for t in parked])
        async with anyio.create_task_group() as group:
            await group.start(stream.run)
            await stream.until(lambda: len(stream.frames) == len(parked), 300, "every snapshot")
            await anyio.sleep(2.0)
            for task in parked[:samples]:
                before = len(stream.of(task.task_id))
                sent_wall = time.time() * 1000
                await mcp.update(task.task_id, {task.key: ANSWER})
                await stream.until(
                    lambda t=task, b=before: any(f.status == "completed" for f in stream.of(t.task_id)[b:]),
                    30,
                    "completed",
                )
                first = next(f for f in stream.of(task.task_id)[before:] if f.status == "working")
                wid = UNKEYED.workflow_id(task.task_id, None)
                history = [e async for e in stack.client.get_workflow_handle(wid).fetch_history_events()]
                signal = _after(history, E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, sent_wall - 50)
                assert signal is not None
                scheduled = _after(history, E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, _ms(signal))
                started = _after(history, E.EVENT_TYPE_WORKFLOW_TASK_STARTED, _ms(signal))
                completed = _after(history, E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, _ms(signal))
                upsert = _after(history, E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED, _ms(signal))
                assert scheduled and started and completed and upsert
                hops.add("1 update sent -> task signal recorded", _ms(signal) - sent_wall)
                hops.add("2 task signal -> task WFT started", _ms(started) - _ms(signal))
                hops.add("3 task WFT started -> completed", _ms(completed) - _ms(started))
                last = _ms(upsert)
                if mode == "feed":
                    shard_id = feed_workflow_id(stack.task_queue, feed_shard(wid))
                    shard = [e async for e in stack.client.get_workflow_handle(shard_id).fetch_history_events()]
                    published = next(
                        (
                            e
                            for e in shard
                            if e.event_type == E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
                            and _ms(e) >= _ms(completed)
                            and any(i.get("m", {}).get("status") == "working" for i in _published(e, wid))
                        ),
                        None,
                    )
                    if published is None:
                        print(f"  {task.task_id}: its publish not in the shard's current run", flush=True)
                        continue
                    s_started = _after(shard, E.EVENT_TYPE_WORKFLOW_TASK_STARTED, _ms(published))
                    s_completed = _after(shard, E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, _ms(published))
                    assert s_started and s_completed
                    if os.environ.get("PROBE_DUMP"):
                        for e in shard:
                            if _ms(published) - 5 <= _ms(e) <= _ms(s_completed) + 60:
                                print(f"    {E.Name(e.event_type)[11:]:45} {_ms(e) - _ms(published):8.1f}", flush=True)
                    hops.add("4 task WFT completed -> shard signal recorded", _ms(published) - _ms(completed))
                    hops.add("5 shard signal -> shard WFT started (off the path)", _ms(s_started) - _ms(published))
                    hops.add("6 shard WFT started -> completed (off the path)", _ms(s_completed) - _ms(s_started))
                    last = _ms(published)
                hops.add("7 last event on the path -> notification read", first.wall_ms - last)
                hops.add("= update sent -> notification read", first.wall_ms - sent_wall)
            group.cancel_scope.cancel()
    return hops


async def amain(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.push_probe")
    parser.add_argument("--tasks", type=positive_int, default=50)
    parser.add_argument("--samples", type=positive_int, default=20)
    parser.add_argument("--mode", choices=("feed", "poll"), default="feed")
    args = parser.parse_args(argv)
    print("\n".join(machine()))
    hops = await probe(args.tasks, args.samples, args.mode)
    rows = [
        (name, str(len(v)), f"{percentile(v, 50):.1f}", f"{percentile(v, 90):.1f}")
        for name, v in sorted(hops.by_name.items())
    ]
    print(render(("hop", "n", "p50 ms", "p90 ms"), rows))
    print(f"load {load_average()}")


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
