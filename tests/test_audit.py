"""`audit`, search attributes and `admin`, against the real dev server, front servers and workers.

Every task here is created over MCP by a principal unique to the test, so the
visibility queries never see another test's tasks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.common import VersioningBehavior
from temporalio.contrib.pydantic import pydantic_data_converter

from mcp_tasks_temporal.ops.audit import SCHEMA_VERSION, load_runs, verify
from mcp_tasks_temporal.ops.dev.embedded_temporal import temporal_cli
from mcp_tasks_temporal.ops.operator_args import EXIT_INCOMPATIBLE, EXIT_USAGE, EXIT_VERIFY_ERROR
from mcp_tasks_temporal.ops.operator_connection import operator_runtime, principal_of
from mcp_tasks_temporal.temporal.ids import UNKEYED
from mcp_tasks_temporal.temporal.worker import WORKFLOWS
from tests.bearer import token_auth
from tests.cli_runs import run_in_process
from tests.conftest import OpenFront, Stack
from tests.docs_pipeline import APP as DOCS_APP
from tests.docs_pipeline import deploy_first, docs_pipeline, without_deploying_status
from tests.front_app import InProcessFront
from tests.processes import (
    CLI,
    FIXTURE_APP,
    REPO_ROOT,
    Process,
    child_env,
    start_front,
    start_temporal,
    start_worker,
)
from tests.test_auth import BearerMcp
from tests.test_listen_batched import joined
from tests.variant_cli import ChangedToolTask, FailingToolTask, RenamedActivityToolTask, UnannouncedToolTask
from tests.wire import HttpMcp, TaskCalls

owner_key = UNKEYED.owner_key

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}
ACCEPT = {"action": "accept", "content": {"approve": True}}


def fresh_names() -> dict[str, str]:
    return {who: f"{who}-{uuid.uuid4().hex[:8]}@example.com" for who in ("alice", "bob")}


@dataclass
class Principals:
    """Two principals unique to the test, with bearer tokens, on a front and its workers."""

    names: dict[str, str]
    alice: TaskCalls
    bob: TaskCalls


@dataclass
class PrivatePrincipals(Principals):
    """Two principals on a front server and a worker process of their own, for a test that breaks them."""

    stack: Stack
    worker: Process
    url: str

    @classmethod
    def private(
        cls, stack_factory: Any, tmp_path: Path, http: httpx.AsyncClient, front_flags: list[str] | None = None
    ) -> PrivatePrincipals:
        """On a front server and worker of their own, for a test that breaks them or needs other flags."""
        names = fresh_names()
        tokens = tmp_path / "tokens"
        tokens.write_text("".join(f"token-{who} {name}\n" for who, name in names.items()))
        stack: Stack = stack_factory()
        worker = stack.add_worker()
        url = stack.add_front(extra=["--tokens", str(tokens), *(front_flags or [])])
        alice, bob = (TaskCalls(BearerMcp(url, http, f"token-{who}")) for who in ("alice", "bob"))
        return cls(names, alice, bob, stack, worker, url)


# More pairs than tests drawing from the pool; each test's names are its own, as with a private front.
PAIRS = 10


@pytest.fixture(scope="module")
def principal_pairs() -> list[dict[str, str]]:
    return [fresh_names() for _ in range(PAIRS)]


@pytest.fixture(scope="module")
def front_settings(principal_pairs: list[dict[str, str]]) -> dict[str, Any]:
    """The module's front, in this process, takes a bearer token per principal of the pool.

    It follows tasks by their histories: a task off the feed records its tool as its first command, which the
    verify tests name; a task on the feed records its publish first (`test_verify_names_the_feeds_publish`).
    """
    tokens = {f"token-{who}-{i}": name for i, names in enumerate(principal_pairs) for who, name in names.items()}
    return {"auth": token_auth(tokens), "push": "poll"}


@pytest.fixture(scope="module")
def unused_pairs(principal_pairs: list[dict[str, str]]) -> Iterator[tuple[int, dict[str, str]]]:
    return iter(enumerate(principal_pairs))


@pytest.fixture
def principals(
    front: InProcessFront, front_http: httpx.AsyncClient, unused_pairs: Iterator[tuple[int, dict[str, str]]]
) -> Principals:
    """Fresh principals on the module's front and workers: the names are unique to the test, the front not."""
    index, names = next(unused_pairs, (None, None))
    if index is None or names is None:
        raise RuntimeError(f"more tests draw principals than PAIRS ({PAIRS}): raise it")
    alice, bob = (TaskCalls(BearerMcp(front.url, front_http, f"token-{who}-{index}")) for who in ("alice", "bob"))
    return Principals(names, alice, bob)


async def run_cli(
    *args: str, module: list[str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """`mcp-tasks-temporal ARGS` in this process (tests/cli_runs.py), or `module ARGS` as a child."""
    if module is None:
        run = await run_in_process(list(args), stdin="", env=child_env(), timeout_s=120)
        done = subprocess.CompletedProcess(list(args), run.code, run.out.encode(), run.err.encode())
    else:
        with anyio.fail_after(120):
            done = await anyio.run_process([*module, *args], cwd=REPO_ROOT, env=child_env(), check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}\n{done.stdout.decode()}\n{done.stderr.decode()}")
    return done


async def until_file(path: Path, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.05)


def has_status_message(task: dict[str, Any]) -> bool:
    return task.get("statusMessage") is not None


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


async def test_json_audit_of_two_questions_a_retry_and_a_cancel(
    stack_factory: Any, tmp_path: Path, http: httpx.AsyncClient, temporal: str, gate: Path
) -> None:
    # A lost attempt is retried 2 s after its worker's last heartbeat.
    principals = PrivatePrincipals.private(stack_factory, tmp_path, http, ["--heartbeat-timeout", "2"])
    mcp, alice = principals.alice, principals.names["alice"]
    created = await mcp.start("survey", {"gate": str(gate)}, capabilities=ELICIT)
    task_id = created["taskId"]
    await until_file(gate / "attempts")
    # The first attempt dies with its worker; a new worker retries it after the heartbeat timeout.
    principals.worker.kill()
    (gate / "go").write_text("1")
    principals.stack.add_worker()
    asking = await mcp.wait_for(task_id, ["input_required"], timeout=30)
    keys = sorted(asking["inputRequests"])
    assert len(keys) == 2
    assert (await mcp.update(task_id, {keys[0]: ACCEPT})).status == 200
    assert (await mcp.update(task_id, {keys[1]: ACCEPT, "not-asked": ACCEPT})).status == 200
    await until_file(gate / "answered")
    await mcp.cancel(task_id)
    closed = await mcp.wait_for(task_id, timeout=30)
    assert closed["status"] == "cancelled"

    done = await run_cli("audit", task_id, "--principal", alice, "--format", "json", "--temporal", temporal)
    story = json.loads(done.stdout)
    assert story["schemaVersion"] == SCHEMA_VERSION
    task = story["task"]
    assert task["taskId"] == task_id and task["kind"] == "tool" and task["tool"] == "survey"
    assert task["arguments"] == {"gate": str(gate)}
    assert task["owner"] == owner_key(principal_of(alice)) and alice not in done.stdout.decode()
    assert task["client"]["info"] == {"name": "tests", "version": "1"}
    assert task["client"]["capabilities"]["elicitation"] == {}
    assert task["workflowId"] == UNKEYED.workflow_id(task_id, principal_of(alice))
    mcp_attributes = {k: v for k, v in task["searchAttributes"].items() if k.startswith("Mcp")}
    assert mcp_attributes == {
        "McpTool": "survey",
        "McpOwner": owner_key(principal_of(alice)),
        "McpStatus": "cancelled",
    }

    times = story["times"]
    assert times["createdAt"] == created["createdAt"]
    assert ms(times["expiresAt"]) == ms(created["createdAt"]) + created["ttlMs"]
    assert ms(times["closedAt"]) >= ms(times["createdAt"])

    statuses = [t["status"] for t in story["statusTransitions"]]
    assert statuses == ["working", "input_required", "working", "cancelled"], story["statusTransitions"]
    assert story["statusTransitions"][-1]["statusMessage"] == "Cancelled by request"
    stamps = [ms(t["at"]) for t in story["statusTransitions"]]
    assert stamps == sorted(stamps)

    questions = {q["key"]: q for q in story["questions"]}
    assert sorted(questions) == keys
    assert questions[keys[0]]["request"] == asking["inputRequests"][keys[0]]
    assert ms(questions[keys[0]]["answeredAt"]) < ms(questions[keys[1]]["answeredAt"])
    accepted = [(a["key"], a["response"]) for a in story["answers"] if a["accepted"]]
    assert accepted == [(keys[0], ACCEPT), (keys[1], ACCEPT)]
    assert len(story["answers"]) == 2  # the front drops the key nobody asked before it reaches Temporal
    assert ms(story["answers"][0]["at"]) >= ms(questions[keys[0]]["askedAt"])

    assert len(story["cancelRequests"]) == 1
    assert ms(story["cancelRequests"][0]["at"]) <= ms(times["closedAt"])

    first, second = story["activities"]
    assert first["round"] == 0 and first["attempts"] == 2 and first["outcome"] == "completed"
    assert first["retryFailure"]["kind"] == "timeout" and first["retryFailure"]["timeoutType"] == "HEARTBEAT"
    assert first["worker"] and first["result"]["resultType"] == "input_required"
    assert second["round"] == 1 and second["attempts"] == 1 and second["outcome"] == "cancelled"
    assert story["outcome"]["status"] == "cancelled" and story["outcome"]["at"] == times["closedAt"]
    assert (gate / "attempts").read_text() == "2"


async def test_verify_passes_on_current_code_and_fails_on_a_changed_workflow(
    principals: Principals, temporal: str, temporal_client: Client
) -> None:
    alice = principals.names["alice"]
    task_id = (await principals.alice.start("double", {"x": 4}))["taskId"]
    assert (await principals.alice.wait_for(task_id))["status"] == "completed"

    ok = await run_cli("audit", task_id, "--principal", alice, "--verify", "--temporal", temporal)
    assert b"verify: compatible" in ok.stderr
    assert b"status" in ok.stdout and b"completed" in ok.stdout
    as_json = await run_cli(
        "audit", task_id, "--principal", alice, "--verify", "--format", "json", "--address", temporal
    )
    story = json.loads(as_json.stdout)
    assert (story["verify"], story["verifyReason"], story["divergence"], story["error"]) == (
        "compatible",
        None,
        None,
        None,
    )

    # The changed code waits on a timer where the history scheduled the tool: named as the tool, not as events.
    changed = await run_cli(
        "audit", task_id, "--principal", alice, "--verify", "--format", "json", "--temporal", temporal,
        module=[sys.executable, "-m", "tests.variant_cli"], check=False,
    )  # fmt: skip
    assert changed.returncode == EXIT_INCOMPATIBLE, changed.stderr
    verdict = json.loads(changed.stdout)  # one JSON document: the core's own warning is not on stdout
    assert verdict["verify"] == "incompatible" and verdict["task"]["taskId"] == task_id
    assert verdict["divergence"]["recorded"] == {"kind": "activity", "name": "the tool 'double' (round 0)"}
    assert verdict["divergence"]["code"] is None, "the changed code issues no command there: it waits on its timer"
    assert "'double'" in verdict["verifyReason"] and "HistoryEvent" not in verdict["verifyReason"]
    [line] = [ln for ln in changed.stderr.decode().splitlines() if ln.startswith("verify:")]
    assert "INCOMPATIBLE" in line and "workflow.patched" in line, line
    assert "Traceback" not in changed.stderr.decode() and " WARN " not in changed.stderr.decode()

    runs = await load_runs(temporal_client, UNKEYED.workflow_id(task_id, principal_of(alice)))
    assert (await verify(runs, WORKFLOWS, temporal_client.data_converter)).verdict == "compatible"
    found = await verify(runs, [ChangedToolTask], temporal_client.data_converter)
    assert found.verdict == "incompatible" and found.divergence is not None
    assert "nondeterminism" in found.divergence.replayer_message.lower()


async def test_verify_names_the_feeds_publish(
    principals: Principals, open_front: OpenFront, temporal_client: Client, gate: Path
) -> None:
    feed_front = await open_front(push="feed")
    alice = principal_of(principals.names["alice"])
    async with feed_front.http() as http:
        alice_token = cast(BearerMcp, principals.alice.client).token
        on_feed = TaskCalls(BearerMcp(feed_front.url, http, alice_token))
        task_id = (await on_feed.start("gated", {"gate": str(gate)}))["taskId"]
        await joined(feed_front.gateway, [task_id], alice)  # as a listen naming it asks
        (gate / "release").write_text("1")
        assert (await on_feed.wait_for(task_id))["status"] == "completed"
    runs = await load_runs(temporal_client, UNKEYED.workflow_id(task_id, alice))
    assert (await verify(runs, WORKFLOWS, temporal_client.data_converter)).verdict == "compatible"
    found = await verify(runs, [UnannouncedToolTask], temporal_client.data_converter)
    assert found.verdict == "incompatible" and found.divergence is not None
    assert found.divergence.as_json()["recorded"] == {"kind": "feed", "name": "the task's publish to its feed shard"}
    assert "__temporal" not in found.divergence.reason()


async def test_audit_finds_a_task_without_the_principal_and_by_workflow_id(
    principals: Principals, temporal: str
) -> None:
    alice = principals.names["alice"]
    task_id = (await principals.alice.start("protocol_error", {}))["taskId"]
    assert (await principals.alice.wait_for(task_id))["status"] == "failed"
    ui = "http://ui.example:8233"
    for ref, extra in ((task_id, []), (UNKEYED.workflow_id(task_id, principal_of(alice)), ["--format", "markdown"])):
        done = await run_cli("audit", ref, "--temporal", temporal, "--temporal-ui", ui, *extra)
        text = done.stdout.decode()
        assert "protocol_error" in text and "-32042" in text and "backend refused" in text
        assert f"{ui}/namespaces/default/workflows/mcp-task%2F{owner_key(principal_of(alice))}%2F{task_id}" in text

    unknown = await run_cli("audit", str(uuid.uuid4()), "--temporal", temporal, check=False)
    assert unknown.returncode == EXIT_USAGE and len(unknown.stderr.decode().strip().splitlines()) == 1
    assert unknown.stdout == b""
    # A script reading --format json gets a document even so, with the error and the verdict it could not reach.
    scripted = await run_cli(
        "audit", str(uuid.uuid4()), "--verify", "--format", "json", "--temporal", temporal, check=False
    )
    assert scripted.returncode == EXIT_USAGE
    document = json.loads(scripted.stdout)
    assert document["error"]["kind"] == "not_found" and document["verify"] == "error"
    assert document["schemaVersion"] == SCHEMA_VERSION and "task" not in document


async def _list(temporal: str, *filters: str) -> list[dict[str, Any]]:
    done = await run_cli("admin", "tasks", "--json", "--temporal", temporal, *filters)
    return json.loads(done.stdout)["tasks"]


async def _until_listed(temporal: str, filters: list[str], expected: set[str], timeout: float = 30) -> None:
    """Visibility lags the workflows by up to a second: wait until the listing settles on `expected`."""
    with anyio.fail_after(timeout):
        while {t["taskId"] for t in await _list(temporal, *filters)} != expected:
            await anyio.sleep(0.2)


async def test_search_attributes_are_listed_by_the_temporal_cli(principals: Principals, temporal: str) -> None:
    mcp, alice = principals.alice, principals.names["alice"]
    task_id = (await mcp.start("greet_someone", capabilities=ELICIT))["taskId"]
    await mcp.wait_for(task_id, ["input_required"])
    query = f'McpStatus="input_required" AND McpOwner="{owner_key(principal_of(alice))}" AND McpTool="greet_someone"'
    command = [temporal_cli(), "workflow", "list", "--address", temporal, "--query", query, "--output", "json"]
    with anyio.fail_after(30):
        while True:
            listed = json.loads((await anyio.run_process(command)).stdout or b"[]")
            if listed:
                break
            await anyio.sleep(0.2)
    assert [w["execution"]["workflowId"] for w in listed] == [UNKEYED.workflow_id(task_id, principal_of(alice))]


async def test_admin_tasks_filters_by_owner_tool_status_and_age(
    principals: Principals, temporal: str, gate: Path
) -> None:
    alice, bob = principals.names["alice"], principals.names["bob"]
    created = await principals.alice.start("gated", {"gate": str(gate)})
    old = created["taskId"]
    await principals.alice.wait_for(old, has_status_message)
    # Age: wait (bounded) until `old` is older than 10 s; every later task is younger by more than that,
    # so a bound 1 s under `old`'s age splits them even if the listing command takes seconds to start.
    await _until_listed(temporal, ["--owner", alice, "--older-than", "10s"], {old})
    asking = (await principals.alice.start("greet_someone", capabilities=ELICIT))["taskId"]
    await principals.alice.wait_for(asking, ["input_required"])
    await _until_listed(temporal, ["--owner", alice, "--status", "input_required"], {asking})
    bound = time.time() - ms(created["createdAt"]) / 1000 - 1
    assert {t["taskId"] for t in await _list(temporal, "--owner", alice, "--older-than", f"{bound:.1f}s")} == {old}
    doubled = (await principals.alice.start("double", {"x": 1}))["taskId"]
    await principals.alice.wait_for(doubled)
    bobs = (await principals.bob.start("double", {"x": 2}))["taskId"]
    await principals.bob.wait_for(bobs)

    await _until_listed(temporal, ["--owner", alice], {old, asking, doubled})
    assert {t["taskId"] for t in await _list(temporal, "--owner", alice, "--older-than", "1h")} == set()
    await _until_listed(temporal, ["--owner", bob], {bobs})
    await _until_listed(temporal, ["--owner", alice, "--tool", "double"], {doubled})
    await _until_listed(temporal, ["--owner", alice, "--status", "input_required"], {asking})
    await _until_listed(temporal, ["--owner", alice, "--status", "working"], {old})
    await _until_listed(temporal, ["--owner", alice, "--status", "completed"], {doubled})
    listed = {t["taskId"]: t for t in await _list(temporal, "--owner", alice)}
    assert listed[asking]["tool"] == "greet_someone" and listed[asking]["owner"] == owner_key(principal_of(alice))

    text = await run_cli("admin", "tasks", "--owner", alice, "--temporal", temporal)
    assert old in text.stdout.decode() and bobs not in text.stdout.decode()
    (gate / "release").write_text("1")


async def test_admin_cancel_cancels_exactly_the_matching_tasks(
    principals: Principals, temporal: str, temporal_client: Client, tmp_path: Path
) -> None:
    alice, bob = principals.names["alice"], principals.names["bob"]
    gates = {name: tmp_path / name for name in ("a1", "a2", "b1")}
    for folder in gates.values():
        folder.mkdir()
    targets = [(await principals.alice.start("gated", {"gate": str(gates[n])}))["taskId"] for n in ("a1", "a2")]
    bystanders = [
        (await principals.bob.start("gated", {"gate": str(gates["b1"])}))["taskId"],
        (await principals.alice.start("greet_someone", capabilities=ELICIT))["taskId"],
    ]
    await principals.alice.wait_for(bystanders[1], ["input_required"])
    await _until_listed(temporal, ["--owner", alice, "--tool", "gated"], set(targets))

    # Without a terminal to ask, nothing happens unless --yes says so.
    refused = await run_cli("admin", "cancel", "--owner", alice, "--tool", "gated", "--temporal", temporal, check=False)
    assert refused.returncode == 2
    assert {(await principals.alice.get(t)).result["status"] for t in targets} == {"working"}

    done = await run_cli(
        "admin", "cancel", "--owner", alice, "--tool", "gated", "--yes", "--json", "--temporal", temporal
    )
    assert {t["taskId"] for t in json.loads(done.stdout)["cancelled"]} == set(targets), (done.stdout, done.stderr)
    for task_id in targets:
        assert (await principals.alice.wait_for(task_id, timeout=30))["status"] == "cancelled"
    for folder in ("a1", "a2"):
        await until_file(gates[folder] / "cancelled")
    assert (await principals.bob.get(bystanders[0])).result["status"] == "working"
    assert (await principals.alice.get(bystanders[1])).result["status"] == "input_required"

    audit = json.loads((await run_cli("audit", targets[0], "--format", "json", "--temporal", temporal)).stdout)
    (request,) = audit["cancelRequests"]
    assert request["identity"].startswith("mcp-tasks-temporal admin") and "operator" in request["reason"]
    for task_id, who in ((bystanders[0], bob), (bystanders[1], alice)):
        handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, principal_of(who)))
        await handle.cancel()
        with anyio.fail_after(30):
            while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await anyio.sleep(0.1)


async def test_admin_cancel_takes_task_ids_under_the_owner_rules(
    principals: Principals, temporal: str, tmp_path: Path
) -> None:
    alice, bob = principals.names["alice"], principals.names["bob"]
    gates = [tmp_path / name for name in ("one", "two")]
    for folder in gates:
        folder.mkdir()
    running = [(await principals.alice.start("gated", {"gate": str(folder)}))["taskId"] for folder in gates]
    for task_id in running:
        await principals.alice.wait_for(task_id, has_status_message)
    ended = (await principals.alice.start("double", {"x": 2}))["taskId"]
    await principals.alice.wait_for(ended)

    # Another principal's name maps the ID to that principal's workflow: nothing of alice's is found, or touched.
    not_bobs = await run_cli("admin", "cancel", running[0], "--owner", bob, "--yes", "--address", temporal, check=False)
    assert not_bobs.returncode == EXIT_USAGE and running[0] in not_bobs.stderr.decode(), not_bobs.stderr
    assert (await principals.alice.get(running[0])).result["status"] == "working"
    # Without a terminal to ask on, and without --yes, nothing happens.
    unasked = await run_cli("admin", "cancel", running[0], "--owner", alice, "--address", temporal, check=False)
    assert unasked.returncode == EXIT_USAGE and "--yes" in unasked.stderr.decode(), unasked.stderr
    # An ended task is named as such; nothing else on the command line is cancelled either.
    refused = await run_cli("admin", "cancel", *running, ended, "--owner", alice, "--yes", "--address", temporal,
                            check=False)  # fmt: skip
    assert refused.returncode == EXIT_USAGE and "already ended (completed)" in refused.stderr.decode()
    assert {(await principals.alice.get(t)).result["status"] for t in running} == {"working"}

    # By the owner's name, and (an operator's lookup) by the task ID alone.
    by_owner = await run_cli("admin", "cancel", running[0], "--owner", alice, "--yes", "--json", "--address", temporal)
    assert [t["taskId"] for t in json.loads(by_owner.stdout)["cancelled"]] == [running[0]]
    by_id = await run_cli("admin", "cancel", running[1], "--yes", "--json", "--address", temporal)
    assert [t["taskId"] for t in json.loads(by_id.stdout)["cancelled"]] == [running[1]]
    for task_id, folder in zip(running, gates, strict=True):
        assert (await principals.alice.wait_for(task_id, timeout=30))["status"] == "cancelled"
        await until_file(folder / "cancelled")
    story = json.loads((await run_cli("audit", running[1], "--format", "json", "--address", temporal)).stdout)
    (request,) = story["cancelRequests"]
    assert request["identity"].startswith("mcp-tasks-temporal admin cancel") and "operator" in request["reason"]


@pytest.mark.parametrize("command", [["audit", "--format", "json"], ["admin", "tasks", "--json"]])
async def test_operator_output_to_a_closed_pipe_ends_quietly(
    principals: Principals, temporal: str, command: list[str]
) -> None:
    task_id = (await principals.alice.start("double", {"x": 5}))["taskId"]
    await principals.alice.wait_for(task_id)
    words = [*command, task_id] if command[0] == "audit" else command
    cli = " ".join(shlex.quote(word) for word in [sys.executable, "-m", "mcp_tasks_temporal", *words])
    with anyio.fail_after(120):
        # `true` reads nothing and is gone long before the command's first write.
        done = await anyio.run_process(
            ["bash", "-o", "pipefail", "-c", f"{cli} --address {temporal} | true"], cwd=REPO_ROOT, env=child_env(),
            check=False,
        )  # fmt: skip
    assert done.returncode == 128 + 13, (done.returncode, done.stderr.decode())
    assert b"Traceback" not in done.stderr and b"Broken pipe" not in done.stderr, done.stderr.decode()


COMMITTED = REPO_ROOT / "tests" / "histories"


@pytest.mark.parametrize(
    ("workflow", "recorded", "code"),
    [
        # A timer added before the tool: the history's tool round meets a workflow still waiting on it.
        (ChangedToolTask, {"kind": "activity", "name": "the tool 'complete' (round 0)"}, None),
        # Another activity where the history started its TTL timer.
        (RenamedActivityToolTask, "timer", {"kind": "activity", "name": "activity 'mcp_tasks.run_tool_v2'"}),
        # Code that fails on the history is incompatible too, with its error.
        (FailingToolTask, {"kind": "activity", "name": "the tool 'complete' (round 0)"}, "failure"),
    ],
)
async def test_verify_names_the_first_diverging_step_of_a_committed_history(
    workflow: type, recorded: Any, code: Any
) -> None:
    history = WorkflowHistory.from_json("audit-variant", (COMMITTED / "completed.json").read_text())
    assert (await verify([history], WORKFLOWS, pydantic_data_converter)).verdict == "compatible"
    found = await verify([history], [workflow], pydantic_data_converter, runtime=operator_runtime())
    assert found.verdict == "incompatible" and found.divergence is not None, found
    divergence = found.divergence.as_json()
    if recorded == "timer":
        assert divergence["recorded"]["kind"] == "timer" and divergence["step"] == 1, divergence
    else:
        assert divergence["recorded"] == recorded, divergence
    if code == "failure":
        assert divergence["code"]["kind"] == "failure" and "no such tool 'complete'" in divergence["code"]["name"]
    else:
        assert divergence["code"] == code, divergence
    assert found.reason is not None and "HistoryEvent" not in found.reason and "machine" not in found.reason


def test_visibility_query_of_the_filters() -> None:
    from mcp_tasks_temporal.ops.admin import TaskFilter
    from mcp_tasks_temporal.ops.operator_cli import parse_duration

    now = datetime.fromisoformat("2026-01-02T03:04:05+00:00")
    query = TaskFilter(owner_key="k", status="failed", older_than=parse_duration("1h30m")).query(now)
    assert query == (
        "WorkflowId STARTS_WITH 'mcp-task/k/' AND StartTime < '2026-01-02T01:34:05+00:00'"
        " AND (ExecutionStatus = 'Failed' OR ExecutionStatus = 'Terminated' OR ExecutionStatus = 'TimedOut')"
    )
    assert TaskFilter(status="completed", running_only=True).query(now) == ""
    assert parse_duration("2d") == timedelta(days=2)
    with pytest.raises(ValueError):
        parse_duration("2 days")


async def test_get_and_watch_link_the_task_in_the_web_ui(
    stack_factory: Any, tmp_path: Path, http: httpx.AsyncClient, temporal: str
) -> None:
    ui = "http://ui.example:8233"
    principals = PrivatePrincipals.private(stack_factory, tmp_path, http, ["--temporal-ui", ui])
    alice = principals.names["alice"]
    task_id = (await principals.alice.start("double", {"x": 3}))["taskId"]
    done: dict[str, Any] = await principals.alice.wait_for(task_id)
    link: str = done["_meta"]["mcp-tasks-temporal/temporalWebUi"]
    wid = UNKEYED.workflow_id(task_id, principal_of(alice))
    assert link.startswith(f"{ui}/namespaces/default/workflows/{wid.replace('/', '%2F')}/")
    assert done["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "fixture-app"

    url = principals.url
    client_flags = ["--url", url, "--token", "token-alice", "--journal", str(tmp_path / "journal")]
    shown = await run_cli("get", task_id, *client_flags)
    assert f"temporal web ui {link}" in shown.stdout.decode()
    watched = await run_cli("watch", task_id, *client_flags)
    assert link in watched.stderr.decode()
    assert "mcp-tasks-temporal" not in json.dumps((await principals.bob.get(task_id)).body)


async def test_without_registered_attributes_a_worker_refuses_with_the_command_and_serve_carries_on(
    workdir: Path, http: httpx.AsyncClient
) -> None:
    server, address = start_temporal(workdir, search_attributes=False)
    try:
        argv = [*CLI, "worker", "--temporal", address, "--task-queue", "bare", "--app", FIXTURE_APP]
        with anyio.fail_after(60):
            refused = await anyio.run_process(argv, cwd=REPO_ROOT, env=child_env(), check=False)
        lines = [line for line in refused.stderr.decode().splitlines() if line.startswith("mcp-tasks-temporal: ")]
        assert refused.returncode == 2 and len(lines) == 1, refused.stderr.decode()
        expected = (
            f"temporal operator search-attribute create --address {address} --namespace default"
            " --name McpTool --type Keyword --name McpOwner --type Keyword --name McpStatus --type Keyword"
        )
        assert f"`{expected}`" in lines[0], lines[0]
        front, url = start_front(workdir, address, "bare")
        worker: Process | None = None
        try:
            assert expected in front.log()
            # The command, run as printed, is all the worker needed.
            created = await anyio.run_process([temporal_cli(), *expected.split()[1:]], check=False)
            assert created.returncode == 0, created.stderr.decode()
            worker = start_worker(workdir, address, "bare")
            mcp = TaskCalls(HttpMcp(url, http))
            task_id = (await mcp.start("greet_someone", capabilities=ELICIT))["taskId"]
            asking = await mcp.wait_for(task_id, ["input_required"])
            (key,) = asking["inputRequests"]
            await mcp.update(task_id, {key: {"action": "accept", "content": {"name": "Ada"}}})
            assert (await mcp.wait_for(task_id))["status"] == "completed"
            story = json.loads((await run_cli("audit", task_id, "--format", "json", "--temporal", address)).stdout)
            # The front found the namespace without them at its start: its tasks run without them.
            assert not [name for name in story["task"]["searchAttributes"] if name.startswith("Mcp")]
            assert [t["status"] for t in story["statusTransitions"]] == [
                "working",
                "input_required",
                "working",
                "completed",
            ]
        finally:
            front.stop()
            if worker is not None:
                worker.stop()
    finally:
        server.stop()


async def test_audit_and_verify_of_a_workflow_task(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_workflow_tools import APP, YES, start_stack
    from tests.workflow_fixture_app import OWN_QUEUE_ENV

    monkeypatch.setenv(OWN_QUEUE_ENV, os.environ.get(OWN_QUEUE_ENV) or f"wf-own-{uuid.uuid4()}")
    stack = start_stack(Stack(workdir, temporal, task_queue=f"wf-audit-{uuid.uuid4()}"))
    try:
        mcp = TaskCalls(HttpMcp(stack.url, http))
        effects = tmp_path / "effects"
        effects.mkdir()
        arguments = {"ref": "v9", "effects": str(effects), "approve_before": "deploy"}
        task_id = (await mcp.start("release", arguments, capabilities=ELICIT))["taskId"]
        await mcp.wait_for(task_id, ["input_required"], timeout=30)
        await mcp.update(task_id, {"approve": YES})
        assert (await mcp.wait_for(task_id, timeout=30))["status"] == "completed"

        without_app = await run_cli("audit", task_id, "--verify", "--temporal", temporal, check=False)
        assert without_app.returncode == EXIT_VERIFY_ERROR, without_app.stderr
        [line] = without_app.stderr.decode().strip().splitlines()
        assert line.startswith("verify: error") and "--app" in line and "INCOMPATIBLE" not in line, line
        done = await run_cli("audit", task_id, "--format", "json", "--verify", "--app", APP, "--temporal", temporal)
        assert b"verify: compatible" in done.stderr
        story = json.loads(done.stdout)
        task = story["task"]
        assert task["kind"] == "workflow" and task["tool"] == "release" and task["owner"] == owner_key(None)
        assert task["client"]["capabilities"]["elicitation"] == {} and task["client"]["info"]["name"] == "tests"
        assert task["searchAttributes"]["McpTool"] == "release"
        statuses = [t["status"] for t in story["statusTransitions"]]
        assert "input_required" in statuses and statuses.index("input_required") < len(statuses) - 1
        (question,) = story["questions"]
        assert question["key"] == "approve" and question["answeredAt"] is not None
        assert [(a["key"], a["response"], a["accepted"]) for a in story["answers"]] == [("approve", YES, True)]
        assert [a["outcome"] for a in story["activities"]] == ["completed"] * len(story["activities"])
        assert len(story["activities"]) >= 4
        assert story["outcome"]["status"] == "completed"
    finally:
        stack.stop()


async def audit_child(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    with anyio.fail_after(120):
        return await anyio.run_process(
            [sys.executable, "-m", "mcp_tasks_temporal", "audit", *args],
            cwd=REPO_ROOT,
            env={**child_env(), **env},
            check=False,
        )


@pytest.mark.parametrize("versioning", [None, "pinned", "auto-upgrade"])
async def test_verify_of_the_docs_pipeline_is_compatible_on_its_code_and_names_a_reordered_step(
    workdir: Path,
    temporal: str,
    http: httpx.AsyncClient,
    tmp_path: Path,
    temporal_client: Client,
    versioning: str | None,
) -> None:
    env = docs_pipeline(tmp_path / "same", versioning=versioning)
    changed = docs_pipeline(tmp_path / "changed", deploy_first, versioning=versioning)
    app = DOCS_APP
    queue = f"docs-audit-{uuid.uuid4()}"
    build = ["--deployment-name", f"docs-{uuid.uuid4().hex[:8]}", "--build-id", "1", "--make-current"]
    worker = start_worker(workdir, temporal, queue, app=app, env=env, extra=build if versioning else None)
    front, url = start_front(workdir, temporal, queue, app=app, env=env)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        task_id = (await mcp.start("release", {"ref": "v7"}, capabilities=ELICIT))["taskId"]
        asking = await mcp.wait_for(task_id, ["input_required"], timeout=60)
        assert list(asking["inputRequests"]) == ["approve"]
        await mcp.update(task_id, {"approve": ACCEPT})
        done = await mcp.wait_for(task_id, timeout=60)
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "v7.tar.gz deployed"
    finally:
        front.stop()
        worker.stop()
    runs = await load_runs(temporal_client, UNKEYED.workflow_id(task_id, None))
    if versioning is not None:
        info = runs.description.raw_description.workflow_execution_info.versioning_info
        auto = info.versioning_override.auto_upgrade or info.behavior == VersioningBehavior.AUTO_UPGRADE
        assert auto == (versioning == "auto-upgrade") and info.deployment_version.build_id == "1", info
    events = [e for h in runs.histories for e in h.events]
    signals = [e.workflow_execution_signaled_event_attributes.signal_name for e in events if e.HasField(
        "workflow_execution_signaled_event_attributes"
    )]  # fmt: skip
    assert "mcp_tasks.activity_status" in signals, "the activity's set_status must be in the recorded history"

    same = await audit_child(env, task_id, "--verify", "--app", app, "--temporal", temporal)
    assert same.returncode == 0, same.stderr
    assert b"verify: compatible" in same.stderr

    reordered = await audit_child(
        changed, task_id, "--verify", "--app", app, "--temporal", temporal, "--format", "json"
    )
    assert reordered.returncode == EXIT_INCOMPATIBLE, reordered.stderr
    [line] = [ln for ln in reordered.stderr.decode().splitlines() if "INCOMPATIBLE" in ln]
    print(line)
    assert "'build'" in line and "'deploy'" in line, line
    assert "UpsertWorkflowSearchAttributes" not in line and "Traceback" not in reordered.stderr.decode()
    verdict = json.loads(reordered.stdout)
    assert verdict["verify"] == "incompatible"
    divergence = verdict["divergence"]
    assert divergence["recorded"] == {"kind": "activity", "name": "activity 'build'"}, divergence
    assert divergence["code"] == {"kind": "activity", "name": "activity 'deploy'"}, divergence
    if versioning is not None:
        return
    # A status line dropped: the replayer's word is the state machine and the event it met; ours is the step.
    dropped = await audit_child(
        docs_pipeline(tmp_path / "dropped", without_deploying_status), task_id, "--verify", "--app", app,
        "--temporal", temporal, "--format", "json",
    )  # fmt: skip
    assert dropped.returncode == EXIT_INCOMPATIBLE, dropped.stderr
    divergence = json.loads(dropped.stdout)["divergence"]
    assert divergence["recorded"]["name"].startswith('set_status("deploying")'), divergence
    assert divergence["code"] == {"kind": "activity", "name": "activity 'deploy'"}, divergence
    assert "machine does not handle this event" in divergence["replayerMessage"], divergence


def docs_verify_pipelines() -> list[str]:
    """docs/operations.md's `admin tasks ... | xargs ... audit --verify` pipelines, each on one line."""
    page = (REPO_ROOT / "docs" / "operations.md").read_text()
    logical = re.sub(r"\\\n\s*", " ", page).splitlines()
    return [line.strip() for line in logical if "xargs" in line and "audit --verify" in line]


async def test_the_docs_verify_pipelines_run_nothing_when_no_task_matches(temporal: str, tmp_path: Path) -> None:
    pipelines = docs_verify_pipelines()
    assert len(pipelines) == 3, pipelines
    shim = tmp_path / "bin" / "mcp-tasks-temporal"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m mcp_tasks_temporal "$@"\n')
    shim.chmod(0o755)
    env = {**child_env(), "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}", "TEMPORAL_ADDRESS": temporal}
    for pipeline in pipelines:
        # No task has this tool: the listing is empty, and the pipeline must not call audit without a task.
        script = pipeline.replace("admin tasks", f"admin tasks --tool none-{uuid.uuid4().hex}", 1)
        with anyio.fail_after(120):
            done = await anyio.run_process(["bash", "-o", "pipefail", "-c", script], env=env, check=False)
        assert done.returncode == 0, (pipeline, done.stderr.decode())
        assert b"usage" not in done.stderr, (pipeline, done.stderr.decode())
