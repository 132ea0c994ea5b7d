"""Fairness between principals, their weights and tool priority, through in-process fronts and a worker, on Temporal.

The worker runs one tool at a time, so a backlog builds in the task queue; the
order the tools then run in (which `tests.fairness_app` records) shows what
Temporal dispatched first. Orders, not times, are compared.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.common import Priority

from mcp_tasks_temporal import TasksExtension
from mcp_tasks_temporal.temporal.fairness import FairnessPolicy, fairness_key
from mcp_tasks_temporal.temporal.fairness_options import parse_weight
from mcp_tasks_temporal.temporal.ids import UNKEYED, WORKFLOW_ID_PREFIX
from tests.bearer import BearerMcp, token_auth
from tests.conftest import OpenFront
from tests.fairness_workflows import PrioritisedWorkflow
from tests.front_app import InProcessFront
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

APP = "tests.fairness_app:app"
ALICE, BOB = "alice-fair-5c1e", "bob-fair-90ab"
PRINCIPALS = {ALICE: "alice@example.com", BOB: "bob@example.com"}
BACKLOG = 30
"""Alice's tasks queued before Bob's."""
LATE = 3
SHARED = 12
"""Each principal's tasks queued side by side, for the weights."""
BOB_WEIGHT = 3
WAIT = 30


@pytest.fixture(scope="module")
def app_spec() -> str:
    return APP


@pytest.fixture(scope="module")
def worker_settings() -> dict[str, Any]:
    """One tool at a time (`--max-concurrent-tools 1`): a backlog builds in the task queue."""
    return {"max_concurrent_activities": 1}


@pytest.fixture(scope="module")
def front_settings() -> dict[str, Any]:
    return {"auth": token_auth(PRINCIPALS)}


@dataclass
class Front:
    """A front to start tasks through: its address, an httpx client of it, and the task queue."""

    url: str
    http: httpx.AsyncClient
    task_queue: str


@pytest.fixture
def fair(front: InProcessFront, front_http: httpx.AsyncClient, app_queue: str) -> Front:
    """The module's front: each principal's tasks under a fairness key of their own."""
    return Front(front.url, front_http, app_queue)


@asynccontextmanager
async def other_front(open_front: OpenFront, app_queue: str, **settings: Any) -> AsyncGenerator[Front]:
    served = await open_front(**settings)
    async with served.http() as http:
        yield Front(served.url, http, app_queue)


@pytest.fixture
async def fifo(open_front: OpenFront, app_queue: str) -> AsyncIterator[Front]:
    """A front without fairness keys (`--no-fairness-keys`): every task in one first-in, first-out line."""
    async with other_front(open_front, app_queue, fairness_keys=False) as served:
        yield served


@pytest.fixture
async def weighted(open_front: OpenFront, app_queue: str) -> AsyncIterator[Front]:
    """A front that gives Bob's tasks `BOB_WEIGHT` times Alice's share."""
    async with other_front(open_front, app_queue, fairness_weights={PRINCIPALS[BOB]: BOB_WEIGHT}) as served:
        yield served


@dataclass
class Started:
    task_id: str
    token: str
    label: str
    workflow_id: str = ""
    """Found through visibility: the ID holds a hash of the principal, which only the front computes."""


async def start(front: Front, token: str, tool: str, gate: Path, label: str) -> Started:
    created = await TaskCalls(BearerMcp(front.url, front.http, token)).start(tool, {"gate": str(gate), "label": label})
    return Started(created["taskId"], token, label)


async def find_workflows(client: Client, task_queue: str, tasks: list[Started]) -> None:
    """Fill in each task's workflow ID from the task queue's workflows (visibility lags a little)."""
    with anyio.fail_after(WAIT):
        while True:
            ids = [wf.id async for wf in client.list_workflows(f'TaskQueue = "{task_queue}"')]
            for task in tasks:
                task.workflow_id = next((i for i in ids if i.endswith("/" + task.task_id)), "")
            if all(task.workflow_id for task in tasks):
                return
            await anyio.sleep(0.1)


def owner_segment(workflow_id: str) -> str:
    prefix, owner, _ = workflow_id.split("/")
    assert prefix == WORKFLOW_ID_PREFIX
    return owner


async def pending_activity(client: Client, task: Started, *, running: bool = False) -> PendingActivityInfo:
    """The task's tool activity once it is scheduled (or, with `running`, started on the worker)."""
    with anyio.fail_after(WAIT):
        while True:
            described = await client.get_workflow_handle(task.workflow_id).describe()
            pending = list(described.raw_description.pending_activities)
            if pending and (not running or pending[0].HasField("last_started_time")):
                return pending[0]
            await anyio.sleep(0.05)


async def backlog_reaches(client: Client, task_queue: str, count: int) -> None:
    """Wait until matching holds `count` activity tasks.

    An activity is pending in its workflow as soon as history schedules it, but
    reaches the task queue a moment later; a slot freed in between would go to a
    task queued earlier, whatever its priority.
    """
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        report_stats=True,
    )
    with anyio.fail_after(WAIT):
        while (await client.workflow_service.describe_task_queue(request)).stats.approximate_backlog_count < count:
            await anyio.sleep(0.1)


@dataclass(frozen=True)
class Ran:
    """One tool call as the worker ran it, with the priority Temporal dispatched its activity with."""

    label: str
    fairness_key: str
    priority_key: str


async def finish(client: Client, gate: Path, tasks: list[Started]) -> list[Ran]:
    """Open the gate, wait for every task, and return the calls in the order their tools ran."""
    (gate / "open").write_text("1")
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            for task in tasks:
                group.start_soon(client.get_workflow_handle(task.workflow_id).result)
    return [Ran(*line.split()) for line in (gate / "order").read_text().splitlines()]


async def test_each_principal_has_its_own_fairness_key_and_a_tool_its_priority(
    fair: Front, temporal_client: Client, gate: Path
) -> None:
    alice = await start(fair, ALICE, "queued", gate, "a")
    bob = await start(fair, BOB, "urgent", gate, "b")
    await find_workflows(temporal_client, fair.task_queue, [alice, bob])
    alice_run, bob_run = [
        (
            await temporal_client.get_workflow_handle(task.workflow_id).describe()
        ).raw_description.workflow_execution_info.priority
        for task in (alice, bob)
    ]
    assert alice_run.fairness_key == owner_segment(alice.workflow_id), "the principal's hash, as in the workflow ID"
    assert bob_run.fairness_key == owner_segment(bob.workflow_id)
    assert alice_run.fairness_key != bob_run.fairness_key
    assert "alice" not in alice_run.fairness_key
    assert bob_run.priority_key == 1, "the tool's priority"
    assert alice_run.priority_key == 0, "a tool without a priority leaves the queue's default"
    ran = {call.label: call for call in await finish(temporal_client, gate, [alice, bob])}
    # The activities carry none of their own: they inherit the run's, as the worker sees.
    assert ran["a"] == Ran("a", alice_run.fairness_key, "-")
    assert ran["b"] == Ran("b", bob_run.fairness_key, "1")


async def test_a_workflow_tools_run_starts_with_its_priority_and_the_principals_key(
    fair: Front, temporal_client: Client
) -> None:
    created = await TaskCalls(BearerMcp(fair.url, fair.http, ALICE)).start("prioritised", {"label": "w"})
    task = Started(created["taskId"], ALICE, "w")
    await find_workflows(temporal_client, fair.task_queue, [task])
    with anyio.fail_after(WAIT):
        answer = await temporal_client.get_workflow_handle(task.workflow_id).result()
    assert answer == f"w {owner_segment(task.workflow_id)} 2"


def folders(parent: Path, *names: str) -> list[Path]:
    """A gate folder per run: each run's tools wait on, and record into, their own."""
    made = [parent / name for name in names]
    for folder in made:
        folder.mkdir()
    return made


async def hold_the_slot(front: Front, client: Client, gate: Path, label: str) -> Started:
    """Alice's task that takes the worker's only tool slot, so every later one queues in Temporal."""
    holder = await start(front, ALICE, "queued", gate, label)
    await find_workflows(client, front.task_queue, [holder])
    await pending_activity(client, holder, running=True)
    return holder


async def backlog(front: Front, client: Client, gate: Path, *, urgent: bool = False) -> list[Ran]:
    """Alice fills the queue, then Bob (and, with `urgent`, Alice's urgent tool) asks; the run order."""
    task_queue = front.task_queue
    holder = await hold_the_slot(front, client, gate, "a0")
    queued: list[Started] = []

    async def add(token: str, tool: str, label: str) -> None:
        queued.append(await start(front, token, tool, gate, label))

    async with anyio.create_task_group() as group:
        for n in range(1, BACKLOG):
            group.start_soon(add, ALICE, "queued", f"a{n}")
    await find_workflows(client, task_queue, queued)
    for task in queued:  # every one of Alice's is in the queue before Bob asks
        await pending_activity(client, task)
    late = [await start(front, BOB, "queued", gate, f"b{n}") for n in range(LATE)]
    if urgent:
        late.append(await start(front, ALICE, "urgent", gate, "u"))
    await find_workflows(client, task_queue, late)
    for task in late:
        await pending_activity(client, task)
    await backlog_reaches(client, task_queue, len(queued) + len(late))
    return await finish(client, gate, [holder, *queued, *late])


async def test_a_principal_asking_late_runs_before_anothers_backlog_drains_and_after_it_without_keys(
    fair: Front, fifo: Front, temporal_client: Client, tmp_path: Path
) -> None:
    gates = folders(tmp_path, "fair", "fifo")
    with_keys = [call.label for call in await backlog(fair, temporal_client, gates[0])]
    without_keys = await backlog(fifo, temporal_client, gates[1], urgent=True)
    assert {call.fairness_key for call in without_keys} == {"-"}
    in_line = [call.label for call in without_keys]
    bob_fair = [i for i, label in enumerate(with_keys) if label.startswith("b")]
    bob_fifo = [i for i, label in enumerate(in_line) if label.startswith("b")]
    assert len(bob_fair) == len(bob_fifo) == LATE
    assert max(bob_fair) < BACKLOG // 2, f"with fairness keys Bob's tasks run early: {with_keys}"
    assert min(bob_fifo) > BACKLOG // 2, f"without them Bob's tasks wait for Alice's: {in_line}"
    assert in_line.index("u") == 1, f"the priority-1 tool runs next, ahead of every queued task: {in_line}"


async def side_by_side(front: Front, client: Client, gate: Path) -> list[str]:
    """Alice and Bob each queue `SHARED` tasks behind one that holds the slot; who ran, in order."""
    holder = await hold_the_slot(front, client, gate, "h")
    queued = [
        await start(front, token, "queued", gate, f"{token[0]}{n}") for n in range(SHARED) for token in (ALICE, BOB)
    ]
    await find_workflows(client, front.task_queue, queued)
    await backlog_reaches(client, front.task_queue, len(queued))
    ran = await finish(client, gate, [holder, *queued])
    return [call.label[0] for call in ran[1:]]


async def test_a_principals_weight_is_its_share_of_the_slots_while_both_have_a_backlog(
    fair: Front, weighted: Front, temporal_client: Client, tmp_path: Path
) -> None:
    gates = folders(tmp_path, "even", "weighted")
    even = await side_by_side(fair, temporal_client, gates[0])
    heavier = await side_by_side(weighted, temporal_client, gates[1])
    window = SHARED  # while both still have tasks queued
    even_share, weighted_share = even[:window].count("b"), heavier[:window].count("b")
    assert abs(even_share - window // 2) <= 1, f"equal weights take turns: {even}"
    expected = window * BOB_WEIGHT // (BOB_WEIGHT + 1)
    assert abs(weighted_share - expected) <= 1, f"Bob's {BOB_WEIGHT}x weight gets him 3 of every 4 slots: {heavier}"


@pytest.mark.parametrize("priority", [0, 6, True, 2.0, "1"])
def test_a_priority_outside_1_to_5_is_refused_where_the_tool_is_declared(priority: object) -> None:
    tasks = TasksExtension()
    with pytest.raises(ValueError, match="priority"):
        tasks.tool(priority=cast(Any, priority))
    with pytest.raises(ValueError, match="priority"):
        tasks.workflow_tool(PrioritisedWorkflow, priority=cast(Any, priority))


def _weighted(entries: list[str]) -> FairnessPolicy:
    """A policy from `PRINCIPAL=WEIGHT` entries, as the front's `--fairness-weight` flags give them."""
    return FairnessPolicy.weighted(dict(parse_weight(entry) for entry in entries))


def test_weights_are_held_by_key_and_keys_can_be_turned_off() -> None:
    policy = _weighted(["alice@example.com=5", "a=b=0.5"])
    assert "alice@example.com" not in policy.weights, "only the hash is kept"
    assert policy.priority("alice@example.com", 2) == Priority(
        priority_key=2, fairness_key=fairness_key("alice@example.com", UNKEYED), fairness_weight=5
    )
    assert policy.priority("a=b").fairness_weight == 0.5
    assert policy.priority("bob@example.com").fairness_weight is None, "the default weight is Temporal's"
    assert policy.priority(None).fairness_key == fairness_key(None, UNKEYED)
    assert FairnessPolicy(keys=False).priority("alice@example.com", 1) == Priority(priority_key=1)
    for bad in ("alice", "=2", "alice=x", "alice=0", "alice=inf", "alice=5000"):
        with pytest.raises(ValueError, match="weight"):
            _weighted([bad])


def test_a_weight_named_by_user_reaches_the_principal_the_front_binds_tasks_to() -> None:
    tokens_file = json.dumps(["alice@example.com", None, "alice@example.com"], separators=(",", ":"))
    jwt = json.dumps(["alice@example.com", "https://idp.example.com", "alice@example.com"], separators=(",", ":"))
    exact = json.dumps(["ci-bot", "https://idp.example.com", None], separators=(",", ":"))
    policy = _weighted(["alice@example.com=5", f"{exact}=0.5"])
    assert policy.priority(tokens_file) == Priority(fairness_key=fairness_key(tokens_file, UNKEYED), fairness_weight=5)
    assert policy.priority(jwt).fairness_weight == 5
    assert policy.priority(exact).fairness_weight == 0.5, "the whole principal, for a verifier without names"
    client_only = json.dumps(["ci-bot", None, None], separators=(",", ":"))
    assert policy.priority(client_only).fairness_weight is None
    assert _weighted(["ci-bot=2"]).priority(client_only).fairness_weight == 2, "no subject: the client"
    for other in ('["bob@example.com",null,"bob@example.com"]', "[1,2", '["alice@example.com"]', "{}"):
        assert policy.priority(other).fairness_weight is None, other
