"""The task feed loses nothing: 1,000 tasks change state while a front, Temporal or a worker is killed, or while
the feed's shards continue as new, and every subscriber sees each task's every transition, in order.

A subscriber that had to listen again (its front died) gets each task's current state first; that snapshot
counts as covering the transitions it sums up, and from there on nothing may be skipped again. A jump in a
task's states on a stream that did not reconnect is a lost transition, and fails the test at once.

One Temporal dev server on a SQLite file (so it restarts with its state), two workers and one front in feed mode,
all real processes killed with SIGKILL; the feed's shards are started with a low continue-as-new threshold, so
they continue as new many times in every test.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RetryConfig

from mcp_tasks_temporal.temporal.feed_contract import FEED_SHARDS, TASK_FEED_WORKFLOW, TaskFeedInput, feed_workflow_id
from tests.processes import Process, free_port, start_front, start_temporal, start_worker, stop_all
from tests.test_push import listen_message
from tests.wire import HttpMcp, TaskCalls, base_headers, sse_frames

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]

TASKS = 1000
LISTENS = 10
"""Subscribers of 100 tasks each: a listen's backlog is bounded, and a reconnect sends every task's snapshot at once."""
CREATES_IN_FLIGHT = 48
ANSWERS_IN_FLIGHT = 16
"""An answer is acknowledged once the task's memo shows it, read every quarter second at most until then: more
answers in flight than the workers take in at once only queue, each polling `describe` while it waits."""
CONTINUE_AFTER_EVENTS = 600
"""Far below the default 10,000: each shard continues as new several times in the test."""
STALL_S = 30.0
"""No notification, no answer delivered for this long: the step that should have made progress failed."""
FRONT_FLAGS = ["--heartbeat-timeout", "3", "--max-listens-per-caller", str(LISTENS)]
"""A killed worker's tool attempt is retried after 3 s without a heartbeat, not the default 30 s; the subscribers,
all from one address, are one anonymous caller, which may hold fewer listens by default."""
COLOR = {"action": "accept", "content": {"color": "red"}}
SIZE = {"action": "accept", "content": {"size": "XL"}}
STATES = [("working", 0), ("input_required", 2), ("input_required", 1), ("working", 0), ("completed", 0)]
"""A `pick_variant` task answered one question at a time, each state as (status, questions outstanding)."""


# -- the cluster ---------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """One dev server on a SQLite file, two workers and one feed-mode front of one task queue."""

    workdir: Path
    task_queue: str = field(default_factory=lambda: f"feedkill-{uuid.uuid4()}")
    temporal_port: int = field(default_factory=free_port)
    temporal: Process | None = None
    front: Process | None = None
    url: str = ""
    workers: list[Process] = field(default_factory=list[Process])
    shards_started: bool = False

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    def start_temporal(self) -> None:
        self.temporal, _ = start_temporal(self.workdir, db_path=self.workdir / "temporal.db", port=self.temporal_port)

    def add_worker(self) -> Process:
        worker = start_worker(self.workdir, self.address, self.task_queue)
        self.workers.append(worker)
        return worker

    def start_front(self) -> None:
        self.front, self.url = start_front(
            self.workdir, self.address, self.task_queue, extra=FRONT_FLAGS, env={"MCP_TASKS_PUSH": "feed"}
        )

    def logs(self, tail: int = 3000) -> str:
        processes = [*([self.front] if self.front else []), *self.workers, *([self.temporal] if self.temporal else [])]
        return "\n".join(f"--- {p.name} (alive={p.alive})\n{p.log()[-tail:]}" for p in processes)

    def stop(self) -> None:
        stop_all([*([self.front] if self.front else []), *self.workers], timeout=5)
        if self.temporal is not None:
            self.temporal.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("feedkill"))
    try:
        running.start_temporal()
        running.add_worker()
        running.add_worker()
        yield running
    finally:
        print(running.logs())  # shown by pytest only when a test failed
        running.stop()


async def connect(address: str) -> Client:
    """A client that gives up on an RPC after a few seconds, retried here, bounded: the server may be restarting."""
    with anyio.fail_after(STALL_S):
        while True:
            try:
                return await Client.connect(address, retry_config=RetryConfig(max_elapsed_time_millis=5000))
            except RuntimeError:
                await anyio.sleep(0.2)


@pytest.fixture
async def ready(cluster: Cluster) -> tuple[Cluster, Client]:
    """The cluster with its shards and front up: the shards first, so they keep the test's low threshold."""
    client = await connect(cluster.address)
    if not cluster.shards_started:
        for shard in range(FEED_SHARDS):
            await client.start_workflow(
                TASK_FEED_WORKFLOW,
                TaskFeedInput(shard=shard, continue_after_events=CONTINUE_AFTER_EVENTS),
                id=feed_workflow_id(cluster.task_queue, shard),
                task_queue=cluster.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
        cluster.shards_started = True
    if cluster.front is None or not cluster.front.alive:
        await anyio.to_thread.run_sync(cluster.start_front)
    return cluster, client


@pytest.fixture
async def http() -> Any:
    # A request during a Temporal outage waits out the front's RPC retries.
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=100)) as client:
        yield client


# -- counting what a subscriber sees -------------------------------------------------------------------


@dataclass
class Ledger:
    """Each task's place in `STATES` as its subscriber saw it, and every way that went wrong."""

    position: dict[str, int] = field(default_factory=dict[str, int])
    fresh: set[str] = field(default_factory=set[str])
    """Tasks whose next notification is a snapshot: the first after a (re)subscribe."""
    delivered: int = 0
    """Transitions seen one by one."""
    covered: int = 0
    """Transitions a snapshot after a reconnect stood for."""
    reconnects: int = 0
    """Listens acknowledged again after a stream ended."""
    lost_reasons: list[str] = field(default_factory=list[str])
    wrong: list[str] = field(default_factory=list[str])
    inputs: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    first: dict[str, int] = field(default_factory=dict[str, int])
    """Where each task was when its subscriber first saw it."""
    changed: anyio.Event = field(default_factory=anyio.Event)

    def see(self, note: dict[str, Any]) -> None:
        task_id = note["taskId"]
        state = (note["status"], len(note.get("inputRequests") or {}))
        if state[1] == 2:
            self.inputs[task_id] = sorted(note["inputRequests"], key=lambda key: "size" in key)
        at = self.position.get(task_id, -1)
        if task_id in self.fresh:
            self.fresh.discard(task_id)
            # A snapshot: the task as it is now, at or after where it was. After a first read it cannot be
            # the first `working` again (the task has asked), so a later `working` is the one after the answers.
            start = max(at, 0) if at <= 0 else max(at, 1)
            later = [i for i in range(start, len(STATES)) if STATES[i] == state]
            if not later:
                self.wrong.append(f"{task_id}: snapshot {state} after {STATES[at] if at >= 0 else None}")
            elif at < 0:
                self.first[task_id] = self.position[task_id] = later[0]
            else:
                self.covered += later[0] - at
                self.position[task_id] = later[0]
        elif at >= 0 and state == STATES[at]:
            pass  # the same state again (a status line): no transition
        elif at + 1 < len(STATES) and state == STATES[at + 1]:
            self.delivered += 1
            self.position[task_id] = at + 1
        else:
            self.wrong.append(f"{task_id}: {state} right after {STATES[at] if at >= 0 else None}: skipped or reordered")
        self.poke()

    def poke(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def at_least(self, task_ids: list[str], index: int) -> bool:
        return all(self.position.get(t, -1) >= index for t in task_ids)

    async def until(self, done: Callable[[], bool], what: str, progress: Callable[[], Any] = lambda: None) -> None:
        """Until `done`, failing at once on a wrong notification and after `STALL_S` without progress.

        A task's first snapshot is progress too: tasks that changed before their subscriber's ack move
        no count of transitions, only their first sighting.
        """
        last = (len(self.position), self.delivered, self.covered, progress())
        stalled_since = time.monotonic()
        while not done():
            assert not self.wrong, self.wrong[:10]
            now = (len(self.position), self.delivered, self.covered, progress())
            if now != last:
                last, stalled_since = now, time.monotonic()
            left = STALL_S - (time.monotonic() - stalled_since)
            if left <= 0:
                raise AssertionError(f"no progress for {STALL_S:.0f}s waiting for {what}")
            with anyio.move_on_after(min(left, 1.0)):
                await self.changed.wait()
        assert not self.wrong, self.wrong[:10]


class Subscriber:
    """One `subscriptions/listen` for some tasks, listened again whenever its stream ends (a front died)."""

    def __init__(self, cluster: Cluster, http: httpx.AsyncClient, task_ids: list[str], ledger: Ledger) -> None:
        self.cluster = cluster
        self.http = http
        self.task_ids = task_ids
        self.ledger = ledger
        self.acked = anyio.Event()

    async def run(self) -> None:
        while True:
            self.ledger.fresh.update(self.task_ids)
            try:
                await self._listen_once()
            except (httpx.TransportError, httpx.HTTPStatusError):
                pass
            # The front is gone or restarting: listen again at once, paced only so a dead port is not hammered.
            await anyio.sleep(0.2)

    async def _listen_once(self) -> None:
        message = listen_message(self.task_ids)
        headers = base_headers("subscriptions/listen")
        timeout = httpx.Timeout(10, read=None)
        async with self.http.stream("POST", self.cluster.url, json=message, headers=headers, timeout=timeout) as reply:
            reply.raise_for_status()
            async for frame in sse_frames(reply):
                if frame.get("method") == "notifications/subscriptions/acknowledged":
                    acked = frame["params"]["notifications"]["taskIds"]
                    assert sorted(acked) == sorted(self.task_ids), f"{len(acked)} of {len(self.task_ids)} acked"
                    if self.acked.is_set():
                        self.ledger.reconnects += 1
                    self.acked.set()
                elif frame.get("method") == "notifications/tasks":
                    self.ledger.see(frame["params"])
                elif "error" in frame:
                    # The front stopped following a task (its Temporal went away too long): listen again.
                    self.ledger.lost_reasons.append(frame["error"]["message"])
                    self.ledger.poke()


# -- driving the tasks ---------------------------------------------------------------------------------


async def create_tasks(cluster: Cluster, http: httpx.AsyncClient, count: int) -> list[str]:
    ids: list[str] = []
    limiter = anyio.CapacityLimiter(CREATES_IN_FLIGHT)

    async def one() -> None:
        calls = TaskCalls(HttpMcp(cluster.url, http))
        async with limiter:
            while True:
                try:
                    created = await calls.start("pick_variant", capabilities=ELICIT_CAPS)
                    break
                except httpx.TransportError:
                    # A keep-alive connection the front closed as the request went out: created again, as a
                    # client would. A task the lost reply had created stays unwatched and changes no count here.
                    await anyio.sleep(0.2)
            ids.append(created["taskId"])

    with anyio.fail_after(STALL_S + count / 10):
        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(one)
    return ids


ELICIT_CAPS: dict[str, Any] = {"elicitation": {"form": {}}}


@dataclass
class Driver:
    """Answers each task's questions one at a time, through whichever front is up, riding out outages."""

    cluster: Cluster
    http: httpx.AsyncClient
    ledger: Ledger
    answered: int = 0

    async def answer(self, task_id: str, key: str, value: dict[str, Any]) -> None:
        stalled_since = time.monotonic()
        while True:
            try:
                calls = TaskCalls(HttpMcp(self.cluster.url, self.http))
                reply = await calls.update(task_id, {key: value})
                if "result" in reply.body:
                    break
                # Refused: after a retry across an outage the first attempt may have been delivered already.
                read = await calls.get(task_id)
                if "result" in read.body and key not in (read.result.get("inputRequests") or {}):
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() - stalled_since < STALL_S, f"no answer to {task_id} delivered for {STALL_S:.0f}s"
            await anyio.sleep(0.2)
        self.answered += 1
        self.ledger.poke()

    async def answer_all(self, task_ids: list[str], which: int, value: dict[str, Any]) -> None:
        limiter = anyio.CapacityLimiter(ANSWERS_IN_FLIGHT)

        async def one(task_id: str) -> None:
            async with limiter:
                await self.answer(task_id, self.ledger.inputs[task_id][which], value)

        async with anyio.create_task_group() as group:
            for task_id in task_ids:
                group.start_soon(one, task_id)


async def stage(
    ledger: Ledger,
    task_ids: list[str],
    index: int,
    what: str,
    disrupt: Callable[[], Awaitable[None]],
    work: Callable[[], Coroutine[Any, Any, None]] | None = None,
    progress: Callable[[], Any] = lambda: None,
) -> None:
    """Until every task reached `STATES[index]`, with `work` driving them; `disrupt` once a third of them have."""
    third = len(task_ids) // 3
    async with anyio.create_task_group() as group:
        if work is not None:
            group.start_soon(work)
        await ledger.until(
            lambda: sum(ledger.position.get(t, -1) >= index for t in task_ids) >= third,
            f"a third of the tasks {what}",
            progress,
        )
        await disrupt()
        await ledger.until(lambda: ledger.at_least(task_ids, index), f"every task {what}", progress)


async def shard_runs(client: Client, cluster: Cluster) -> list[str]:
    return [
        (await client.get_workflow_handle(feed_workflow_id(cluster.task_queue, shard)).describe()).run_id
        for shard in range(FEED_SHARDS)
    ]


async def test_every_transition_of_a_thousand_tasks_survives_kills_restarts_and_continue_as_new(
    ready: tuple[Cluster, Client], http: httpx.AsyncClient
) -> None:
    """A worker killed while the tasks ask, the front while they are answered, Temporal while they complete."""
    cluster, client = ready
    first_runs = await shard_runs(client, cluster)
    started = time.monotonic()
    ledger = Ledger()
    ids = await create_tasks(cluster, http, TASKS)
    timings = {"create": time.monotonic() - started}
    driver = Driver(cluster, http, ledger)

    async def kill_a_worker() -> None:
        victim = cluster.workers.pop(0)
        victim.kill()
        await anyio.to_thread.run_sync(cluster.add_worker)

    async def restart_the_front() -> None:
        assert cluster.front is not None
        cluster.front.kill()
        await anyio.to_thread.run_sync(cluster.start_front)

    async def restart_temporal() -> None:
        assert cluster.temporal is not None
        cluster.temporal.kill()
        await anyio.to_thread.run_sync(cluster.start_temporal)

    counts: dict[str, tuple[int, int, int]] = {}

    def tally(name: str, since: float) -> None:
        timings[name] = time.monotonic() - since
        counts[name] = (ledger.delivered, ledger.covered, ledger.reconnects)

    groups = [ids[n::LISTENS] for n in range(LISTENS)]
    first: dict[str, int] = {}
    async with anyio.create_task_group() as listening:
        for group in groups:
            listening.start_soon(Subscriber(cluster, http, group, ledger).run)
        since = time.monotonic()
        await stage(ledger, ids, 1, "asked its two questions (a worker killed)", kill_a_worker)
        tally("asked, worker killed", since)
        first.update(ledger.first)
        assert ledger.reconnects == 0, ledger.lost_reasons[:3]

        since = time.monotonic()
        answered = lambda: driver.answered  # noqa: E731
        colors = lambda: driver.answer_all(ids, 0, COLOR)  # noqa: E731
        await stage(ledger, ids, 2, "got its first answer (the front restarted)", restart_the_front, colors, answered)
        tally("first answer, front restarted", since)
        assert ledger.reconnects >= LISTENS, "every subscriber listened again on the new front"

        since = time.monotonic()
        sizes = lambda: driver.answer_all(ids, 1, SIZE)  # noqa: E731
        await stage(ledger, ids, 4, "completed (Temporal restarted)", restart_temporal, sizes, answered)
        tally("completed, Temporal restarted", since)
        listening.cancel_scope.cancel()

    # Every transition of every task from the state its subscriber first saw: seen one by one, or, only after a
    # reconnect, summed up by the snapshot that followed.
    owed = sum(len(STATES) - 1 - first[t] for t in ids)
    assert ledger.delivered + ledger.covered == owed
    last_runs = await shard_runs(client, cluster)
    assert all(a != b for a, b in zip(first_runs, last_runs, strict=True)), "every shard continued as new meanwhile"
    print(
        f"{TASKS} tasks: {owed} transitions owed, {ledger.delivered} delivered one by one, {ledger.covered} covered by "
        f"snapshots after {ledger.reconnects} reconnects ({len(ledger.lost_reasons)} listens ended by the front); "
        f"per stage (delivered, covered, reconnects so far) {counts}; seconds {timings}, "
        f"total {time.monotonic() - started:.1f}"
    )
