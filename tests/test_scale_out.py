"""Scale-out: 2 front servers and 2 workers on one Temporal dev server (SQLite file), 100 slow tasks at once.

Each test breaks one part mid-run (a front, a worker, Temporal itself) and then
checks that every task completed with the right result, is readable through any
front, and left its effect as at-least-once activities allow: one line from
attempt 1, or lines whose extra entries all come from retries (attempt > 1),
never the same attempt twice, never a second task for one call.

The stack is built per test, with its own Temporal dev server on a SQLite file
in the test's tmp dir, so a test may kill anything and restart Temporal on the
same port and file.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp_types import HEADER_MISMATCH

from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import TOOL_TASK_WORKFLOW
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.polling import pauses
from tests.processes import Process, free_port, start_front, start_temporal, start_worker
from tests.wire import TERMINAL, HttpMcp, TaskCalls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SCALE_APP = "tests.scale_app:app"
TASKS = 100
IN_FLIGHT = 10
# A killed worker's attempt counts as lost after 2 s without a heartbeat, then is retried.
FRONT_FLAGS = ["--heartbeat-timeout", "2"]
MAX_ATTEMPTS = 3  # ActivityPolicy.maximum_attempts, the front's default
SETTLE_S = 90.0
# 8 s tools (16 steps of 0.5 s): each kill waits for ten tools running at once, and a worker's tools are seen on it
# only once an activity adopts them, after their first second; on a loaded machine 3 s tools could all end before
# the hundredth create returned, and the wait found none.
TOOL_STEPS = 16
SETTLE_AFTER_RESTART_S = 180.0
STALL_S = 30.0
ROUND_PAUSE_S = 0.5
EFFECT = re.compile(r"^attempt=(\d+) workflow=(\S+) activity=(\S+)$")


# -- the stack ----------------------------------------------------------------------------------


@dataclass
class Front:
    process: Process
    url: str

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])


@dataclass
class ScaleStack:
    """One Temporal dev server on a SQLite file, with the fronts and workers of one private task queue."""

    workdir: Path
    db_path: Path
    effects: Path
    task_queue: str = field(default_factory=lambda: f"scale-{uuid.uuid4()}")
    temporal_port: int = field(default_factory=free_port)
    temporal: Process | None = None
    fronts: list[Front] = field(default_factory=list[Front])
    workers: list[Process] = field(default_factory=list[Process])

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    def start_temporal(self) -> None:
        self.temporal, _ = start_temporal(self.workdir, db_path=self.db_path, port=self.temporal_port)

    def add_worker(self) -> Process:
        worker = start_worker(self.workdir, self.address, self.task_queue, app=SCALE_APP)
        self.workers.append(worker)
        return worker

    def add_front(self, port: int | None = None) -> Front:
        process, url = start_front(
            self.workdir, self.address, self.task_queue, app=SCALE_APP, port=port, extra=FRONT_FLAGS
        )
        front = Front(process, url)
        self.fronts.append(front)
        return front

    def live_fronts(self) -> list[Front]:
        return [front for front in self.fronts if front.process.alive]

    def logs(self, tail: int = 3000) -> str:
        processes = [*(f.process for f in self.fronts), *self.workers, *([self.temporal] if self.temporal else [])]
        return "\n".join(f"--- {p.name} (alive={p.alive})\n{p.log()[-tail:]}" for p in processes)

    def stop(self) -> None:
        for front in self.fronts:
            front.process.stop()
        for worker in self.workers:
            worker.stop()
        if self.temporal is not None:
            self.temporal.stop()


@pytest.fixture
def scale(tmp_path: Path) -> Iterator[ScaleStack]:
    stack = ScaleStack(workdir=tmp_path, db_path=tmp_path / "temporal.db", effects=tmp_path / "effects")
    stack.effects.mkdir()
    started = time.monotonic()
    try:
        stack.start_temporal()
        # The four processes are independent: start them side by side (each start waits until ready).
        with ThreadPoolExecutor(4) as pool:
            jobs = [pool.submit(stack.add_worker) for _ in range(2)] + [pool.submit(stack.add_front) for _ in range(2)]
            for job in jobs:
                job.result()
        print(f"stack up in {time.monotonic() - started:.1f}s")
        yield stack
    finally:
        print(stack.logs())  # shown by pytest only when the test failed
        stack.stop()


@pytest.fixture
async def http() -> Any:
    # Reads during a Temporal outage wait out the client's RPC retries: allow for them.
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=50)) as client:
        yield client


def calls_for(front: Front, http: httpx.AsyncClient) -> TaskCalls:
    return TaskCalls(HttpMcp(front.url, http))


# -- many tasks at once -------------------------------------------------------------------------


@dataclass(frozen=True)
class Created:
    task_id: str
    n: int
    front: int


async def create_crunches(
    fronts: Sequence[TaskCalls], effects: Path, *, count: int = TASKS, in_flight: int = IN_FLIGHT
) -> list[Created]:
    """Start `count` crunch tasks of `TOOL_STEPS` steps, spread round-robin over the fronts, `in_flight` at a time."""
    limiter = anyio.CapacityLimiter(in_flight)
    created: list[Created] = []

    async def one(n: int) -> None:
        index = n % len(fronts)
        async with limiter:
            result = await fronts[index].start("crunch", {"n": n, "effects": str(effects), "steps": TOOL_STEPS})
        assert result["status"] == "working", result
        created.append(Created(result["taskId"], n, index))

    async with anyio.create_task_group() as group:
        for n in range(count):
            group.start_soon(one, n)
    assert len({c.task_id for c in created}) == count
    return sorted(created, key=lambda c: c.n)


@dataclass
class Round:
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    errors: dict[str, str] = field(default_factory=dict[str, str])


async def read_all(fronts: Sequence[TaskCalls], task_ids: Sequence[str], *, in_flight: int = IN_FLIGHT) -> Round:
    """One `tasks/get` per task, alternating fronts; a failed read is recorded, not raised."""
    limiter = anyio.CapacityLimiter(in_flight)
    seen = Round()

    async def one(i: int, task_id: str) -> None:
        async with limiter:
            try:
                reply = await fronts[i % len(fronts)].get(task_id)
            except httpx.TransportError as err:
                seen.errors[task_id] = f"transport: {err!r}"
                return
        if "result" in reply.body:
            seen.tasks[task_id] = reply.body["result"]
        else:
            seen.errors[task_id] = f"HTTP {reply.status}: {reply.body.get('error')}"

    async with anyio.create_task_group() as group:
        for i, task_id in enumerate(task_ids):
            group.start_soon(one, i, task_id)
    return seen


async def settle(
    fronts: Sequence[TaskCalls], task_ids: Sequence[str], *, timeout: float = SETTLE_S, stack: ScaleStack
) -> dict[str, dict[str, Any]]:
    """Read every unfinished task once per round until all are terminal, bounded by `timeout`.

    A hundred tasks need the long bound; a run where none finishes for `STALL_S` fails then.
    """
    pending = list(task_ids)
    finished: dict[str, dict[str, Any]] = {}
    last = Round()
    rounds = 0
    progressed_at = time.monotonic()
    with anyio.move_on_after(timeout):
        while pending:
            rounds += 1
            last = await read_all(fronts, pending)
            done = {tid: task for tid, task in last.tasks.items() if task["status"] in TERMINAL}
            if done:
                progressed_at = time.monotonic()
            finished.update(done)
            pending = [tid for tid in pending if tid not in finished]
            if pending and time.monotonic() - progressed_at > STALL_S:
                break
            if pending:
                await anyio.sleep(ROUND_PAUSE_S)
    if pending:
        statuses = Counter(task["status"] for tid, task in last.tasks.items() if tid in pending)
        errors = Counter(last.errors.values()).most_common(3)
        pytest.fail(
            f"{len(pending)} of {len(task_ids)} tasks not terminal after {timeout}s, or none for {STALL_S}s "
            f"({rounds} rounds): "
            f"{dict(statuses)}, errors {errors}\n{stack.logs()}"
        )
    return finished


async def running_now(fronts: Sequence[TaskCalls], task_ids: Sequence[str]) -> list[str]:
    """The tasks whose tool is mid-run right now (working, with a step reported)."""
    seen = await read_all(fronts, task_ids)
    return [
        tid
        for tid, task in seen.tasks.items()
        if task["status"] == "working" and str(task.get("statusMessage", "")).startswith("step ")
    ]


async def until_running(fronts: Sequence[TaskCalls], task_ids: Sequence[str], *, at_least: int) -> list[str]:
    with anyio.fail_after(30):
        while True:
            running = await running_now(fronts, task_ids)
            if len(running) >= at_least:
                return running
            await anyio.sleep(0.1)


# -- the checks -----------------------------------------------------------------------------------


def assert_results(created: Sequence[Created], finished: dict[str, dict[str, Any]], *, via: str) -> None:
    wrong = {
        c.n: finished[c.task_id]
        for c in created
        if finished[c.task_id]["status"] != "completed"
        or finished[c.task_id]["result"].get("structuredContent") != {"n": c.n, "square": c.n * c.n}
    }
    assert not wrong, f"{len(wrong)} tasks with a wrong outcome read through {via}: {list(wrong.items())[:3]}"
    assert all(finished[c.task_id]["result"]["isError"] is False for c in created)


@dataclass(frozen=True)
class Effects:
    repeated: int
    """Tasks whose effect happened more than once (all repeats from retries)."""
    retried: int
    """Tasks with any line from an attempt > 1."""
    lines: int


def check_effects(effects: Path, created: Sequence[Created]) -> Effects:
    """Every task's effect file obeys the at-least-once contract documented in tests/scale_app.py."""
    expected = {str(c.n): UNKEYED.workflow_id(c.task_id, None) for c in created}
    files = {path.name for path in effects.iterdir()}
    assert files == set(expected), f"effect files missing {set(expected) - files}, extra {files - set(expected)}"
    repeated = retried = lines = 0
    for name, workflow in expected.items():
        entries = [EFFECT.match(line) for line in (effects / name).read_text().splitlines()]
        assert entries and all(entries), f"effect file {name} is malformed: {(effects / name).read_text()!r}"
        attempts = [int(m.group(1)) for m in entries if m]
        assert {m.group(2) for m in entries if m} == {workflow}, f"task {name}: effect from another workflow"
        assert len({m.group(3) for m in entries if m}) == 1, f"task {name}: effects of different activities"
        assert attempts.count(1) <= 1, f"task {name}: attempt 1 recorded its effect twice: {attempts}"
        assert len(set(attempts)) == len(attempts), f"task {name}: one attempt recorded twice: {attempts}"
        assert all(1 <= a <= MAX_ATTEMPTS for a in attempts), f"task {name}: attempts {attempts}"
        lines += len(attempts)
        repeated += len(attempts) > 1
        retried += max(attempts) > 1
    return Effects(repeated=repeated, retried=retried, lines=lines)


async def assert_one_workflow_per_task(stack: ScaleStack, count: int) -> None:
    """No create was doubled: the task queue holds exactly one task workflow per task (visibility may lag); the
    feed's shards run there too."""
    client = await connect_temporal(stack.address)
    query = f'TaskQueue = "{stack.task_queue}" AND WorkflowType = "{TOOL_TASK_WORKFLOW}"'
    with anyio.fail_after(20):
        while (found := (await client.count_workflows(query)).count) != count:
            assert found < count, f"{found} workflows for {count} tasks"
            await anyio.sleep(0.2)


async def tools_per_worker(stack: ScaleStack, task_ids: Sequence[str]) -> Counter[str]:
    """How many of these tasks' tools each worker runs now, by worker pid (Temporal's `pid@host` identity).

    Waits until some tool runs as an activity a worker has taken: a tool's first second runs inside its
    workflow's first task (a local activity, no pending activity to see), and the activity that adopts it
    after is seen only once a worker has taken it.
    """
    client = await connect_temporal(stack.address)
    limiter = anyio.CapacityLimiter(IN_FLIGHT)

    async def count() -> Counter[str]:
        on_worker: Counter[str] = Counter()

        async def one(task_id: str) -> None:
            async with limiter:
                description = await client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()
            for pending in description.raw_description.pending_activities:
                if pending.last_worker_identity:
                    on_worker[pending.last_worker_identity.split("@", 1)[0]] += 1

        async with anyio.create_task_group() as group:
            for task_id in task_ids:
                group.start_soon(one, task_id)
        return on_worker

    wait = pauses()
    with anyio.fail_after(30):
        while not (on_worker := await count()):
            await anyio.sleep(next(wait))
    return on_worker


# -- the tests ------------------------------------------------------------------------------------


async def test_front_killed_mid_run(scale: ScaleStack, http: httpx.AsyncClient) -> None:
    fronts = [calls_for(f, http) for f in scale.fronts]
    created = await create_crunches(fronts, scale.effects)
    ids = [c.task_id for c in created]
    running = await until_running(fronts, ids, at_least=10)

    victim = scale.fronts[0]
    victim.process.kill()
    with pytest.raises(httpx.TransportError):
        await fronts[0].get(ids[0])

    survivor = fronts[1]
    finished = await settle([survivor], ids, stack=scale)
    assert_results(created, finished, via="the surviving front")
    # Tasks created on the dead front were mid-run when it died and finished all the same.
    assert any(c.front == 0 for c in created if c.task_id in running)

    restarted = calls_for(scale.add_front(port=victim.port), http)
    again = await read_all([restarted], ids)
    assert not again.errors, list(again.errors.items())[:3]
    assert_results(created, again.tasks, via="the restarted front")
    assert again.tasks == finished  # the same DetailedTask through either front

    effects = check_effects(scale.effects, created)
    await assert_one_workflow_per_task(scale, TASKS)
    print(f"effects: {effects}")


async def test_worker_killed_mid_activity(scale: ScaleStack, http: httpx.AsyncClient) -> None:
    fronts = [calls_for(f, http) for f in scale.fronts]
    created = await create_crunches(fronts, scale.effects)
    ids = [c.task_id for c in created]
    # Ten at once, as the other kills wait for: each create takes its tool's inline budget, so on a loaded
    # machine the first tasks may end before the last are created, and twenty need not ever run together.
    await until_running(fronts, ids, at_least=10)

    # Kill the worker that runs the most tools right now (Temporal knows which one: pid@host).
    on_worker = await tools_per_worker(scale, ids)
    victim = max(scale.workers, key=lambda w: on_worker[str(w.popen.pid)])
    assert on_worker[str(victim.popen.pid)] > 0, f"no tool running on either worker: {on_worker}"
    victim.kill()

    finished = await settle(fronts, ids, stack=scale)
    assert_results(created, finished, via="both fronts")
    effects = check_effects(scale.effects, created)
    # The killed worker's attempts were lost mid-step and run again elsewhere.
    assert effects.retried > 0, f"no retried attempt although {on_worker[str(victim.popen.pid)]} tools were killed"
    await assert_one_workflow_per_task(scale, TASKS)
    print(f"tools per worker pid at the kill: {dict(on_worker)}, killed {victim.popen.pid}; effects: {effects}")


async def test_temporal_restarted_mid_run(scale: ScaleStack, http: httpx.AsyncClient) -> None:
    fronts = [calls_for(f, http) for f in scale.fronts]
    created = await create_crunches(fronts, scale.effects)
    ids = [c.task_id for c in created]
    running = await until_running(fronts, ids, at_least=10)

    assert scale.temporal is not None
    scale.temporal.stop()  # SIGTERM: the dev server shuts down and closes its SQLite file
    # While Temporal is down a read is a JSON-RPC error, not a hang or an HTTP 500. The task read is one
    # last seen running: on a slow machine the first tasks may have completed already, and a front
    # serves a task it saw close from its own memory.
    started = time.monotonic()
    with anyio.fail_after(30):
        outage = await fronts[0].get(running[0])
    outage_read_s = time.monotonic() - started
    assert outage.status == 200 and outage.error["message"] == "Task service unavailable, try again", outage.body

    scale.start_temporal()  # same port, same SQLite file
    finished = await settle(fronts, ids, timeout=SETTLE_AFTER_RESTART_S, stack=scale)
    assert_results(created, finished, via="both fronts")
    assert all(front.process.alive for front in scale.fronts)
    assert all(worker.alive for worker in scale.workers)
    effects = check_effects(scale.effects, created)
    await assert_one_workflow_per_task(scale, TASKS)
    print(f"read during the outage answered in {outage_read_s:.1f}s; effects: {effects}")


async def test_any_front_serves_a_task_created_on_another(scale: ScaleStack, http: httpx.AsyncClient) -> None:
    a, b = (calls_for(f, http) for f in scale.fronts)

    # Read at once through B: no sticky routing, no replication lag.
    long = await a.start("crunch", {"n": 7, "effects": str(scale.effects), "steps": 600})
    seen = await b.get(long["taskId"])
    assert seen.status == 200 and seen.result["taskId"] == long["taskId"]
    assert seen.result["status"] == "working" and seen.result["createdAt"] == long["createdAt"]

    # Mcp-Name is checked on B as on A: it must name the body's task.
    wrong = await b.get(long["taskId"], headers={"mcp-name": str(uuid.uuid4())})
    assert wrong.status == 400 and wrong.error["code"] == HEADER_MISMATCH

    # Cancelled through B, while the tool runs; A sees the same outcome.
    await b.wait_for(long["taskId"], lambda t: str(t.get("statusMessage", "")).startswith("step "))
    assert (await b.cancel(long["taskId"])).result["resultType"] == "complete"
    cancelled = await b.wait_for(long["taskId"], timeout=30)
    assert cancelled["status"] == "cancelled"
    assert (await a.get(long["taskId"])).result["status"] == "cancelled"
    assert not (scale.effects / "7").exists(), "a cancelled crunch recorded its effect"

    # A question asked by a task created on A is answered through B.
    asking = await a.start("approve_square", {"n": 9}, capabilities={"elicitation": {}})
    task = await b.wait_for(asking["taskId"], {"input_required"})
    [key] = task["inputRequests"]
    assert (await b.update(asking["taskId"], {key: {"action": "accept", "content": {"approve": True}}})).status == 200
    done = await a.wait_for(asking["taskId"])
    assert done["status"] == "completed" and done["result"]["structuredContent"] == {"n": 9, "square": 81}
    assert (await b.get(asking["taskId"])).result == done

    # And a quick crunch created on B completes, read through A.
    quick = await b.start("crunch", {"n": 3, "effects": str(scale.effects), "steps": 1, "step_s": 0.1})
    finished = await a.wait_for(quick["taskId"])
    assert finished["result"]["structuredContent"] == {"n": 3, "square": 9}
    assert (scale.effects / "3").read_text().startswith("attempt=1 ")
