"""input_required end to end: questions from tasks, answers through tasks/update.

The front and its worker run in the test process; the two tests that kill a worker or a front run them
as processes of their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.conftest import OpenFront, Stack
from tests.direct_signals import signal_answers
from tests.processes import free_port
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}
ALL_KINDS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


async def wait_input(front_mcp: TaskCalls, task_id: str, count: int = 1) -> dict[str, Any]:
    return await front_mcp.wait_for(
        task_id, lambda t: t["status"] == "input_required" and len(t.get("inputRequests", {})) == count
    )


async def test_elicitation_from_a_task_is_answered_through_tasks_update(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("greet_someone", capabilities=ELICIT)
    task = await wait_input(front_mcp, created["taskId"])
    [(key, request)] = task["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["requestedSchema"]["properties"]["name"]["type"] == "string"
    assert set(request) == {"method", "params"}
    ack = await front_mcp.update(created["taskId"], {key: accept(name="Ada")})
    assert ack.result["resultType"] == "complete" and set(ack.result) <= {"resultType", "_meta"}
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"
    assert "inputRequests" not in done


async def test_sampling_request_is_answered_with_a_model_reply(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("sample_river", capabilities=ALL_KINDS)
    task = await wait_input(front_mcp, created["taskId"])
    [(key, request)] = task["inputRequests"].items()
    assert request["method"] == "sampling/createMessage"
    reply = {"role": "assistant", "content": {"type": "text", "text": "the Danube"}, "model": "test-model"}
    await front_mcp.update(created["taskId"], {key: reply})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "The model said: the Danube"


async def test_roots_request_is_answered_with_the_client_roots(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("count_roots", capabilities=ALL_KINDS)
    task = await wait_input(front_mcp, created["taskId"])
    [(key, request)] = task["inputRequests"].items()
    assert request["method"] == "roots/list"
    await front_mcp.update(created["taskId"], {key: {"roots": [{"uri": "file:///src"}, {"uri": "file:///docs"}]}})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "2 roots: file:///src, file:///docs"


async def test_two_questions_answered_one_at_a_time(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("pick_variant", capabilities=ELICIT)
    task = await wait_input(front_mcp, created["taskId"], count=2)
    keys = sorted(task["inputRequests"])
    color_key = next(k for k in keys if "color" in k)
    size_key = next(k for k in keys if "size" in k)
    await front_mcp.update(created["taskId"], {color_key: accept(color="red")})
    after_first = (await front_mcp.get(created["taskId"])).result
    assert after_first["status"] == "input_required"
    assert set(after_first["inputRequests"]) == {size_key}
    await front_mcp.update(created["taskId"], {size_key: accept(size="large")})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "large red"


async def test_unknown_duplicate_and_malformed_answers(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("pick_variant", capabilities=ELICIT)
    task = await wait_input(front_mcp, created["taskId"], count=2)
    color_key, size_key = sorted(task["inputRequests"], key=lambda k: "size" in k)
    unknown = await front_mcp.update(created["taskId"], {"no-such-key": {"whatever": [1, 2]}})
    assert unknown.result["resultType"] == "complete"
    malformed = await front_mcp.update(created["taskId"], {color_key: {"action": "maybe"}})
    assert malformed.error["code"] == -32602
    still = (await front_mcp.get(created["taskId"])).result
    assert set(still["inputRequests"]) == {color_key, size_key}
    await front_mcp.update(created["taskId"], {color_key: accept(color="blue")})
    duplicate = await front_mcp.update(created["taskId"], {color_key: accept(color="green")})
    assert duplicate.result["resultType"] == "complete"
    await front_mcp.update(created["taskId"], {size_key: accept(size="small")})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "small blue", "the first answer to a key is the one that counts"


async def test_update_of_a_terminal_task_is_acked_and_ignored(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 2})
    done = await front_mcp.wait_for(created["taskId"])
    ack = await front_mcp.update(created["taskId"], {"anything": accept(x=1)})
    assert ack.result["resultType"] == "complete"
    assert (await front_mcp.get(created["taskId"])).result["result"] == done["result"]


async def test_cancel_while_waiting_for_input_settles_cancelled(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("greet_someone", capabilities=ELICIT)
    await wait_input(front_mcp, created["taskId"])
    assert (await front_mcp.cancel(created["taskId"])).result["resultType"] == "complete"
    task = await front_mcp.wait_for(created["taskId"], timeout=10)
    assert task["status"] == "cancelled"
    assert "inputRequests" not in task


async def test_request_kinds_the_client_did_not_declare_are_never_sent(front_mcp: TaskCalls) -> None:
    # The SDK's resolver refuses to ask; a hand-built InputRequiredResult is refused by the activity.
    for tool in ("greet_someone", "ask_without_capability"):
        created = await front_mcp.start(tool, capabilities={"sampling": {}})
        task = await front_mcp.wait_for(created["taskId"])
        assert task["status"] == "failed", tool
        assert task["error"]["code"] == -32021
        assert task["error"]["data"]["requiredCapabilities"]["elicitation"] is not None
        assert "inputRequests" not in task


async def test_keys_are_unique_over_the_task_life_and_earlier_work_never_reruns(
    front_mcp: TaskCalls, gate: Path
) -> None:
    created = await front_mcp.start("release", {"gate": str(gate)}, capabilities=ELICIT)
    first = await wait_input(front_mcp, created["taskId"])
    [first_key] = first["inputRequests"]
    await front_mcp.update(created["taskId"], {first_key: accept(approve=True)})
    second = await front_mcp.wait_for(
        created["taskId"], lambda t: t["status"] == "input_required" and first_key not in t["inputRequests"]
    )
    [second_key] = second["inputRequests"]
    assert second_key != first_key, "the tool reused its key; the task must not"
    late = await front_mcp.update(created["taskId"], {first_key: accept(approve=False)})
    assert late.result["resultType"] == "complete"
    await front_mcp.update(created["taskId"], {second_key: accept(approve=True)})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "published build 1"
    assert (gate / "build-runs").read_text() == "1"


async def test_request_input_midway_continues_without_redoing_the_work(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("ask_midway", {"gate": str(gate)}, capabilities=ELICIT)
    task = await wait_input(front_mcp, created["taskId"], count=2)
    left, right = sorted(task["inputRequests"])
    await front_mcp.update(created["taskId"], {left: accept(approve=True)})
    partial = (await front_mcp.get(created["taskId"])).result
    assert set(partial["inputRequests"]) == {right}
    await front_mcp.update(created["taskId"], {right: {"action": "decline"}})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "accept/decline"
    assert (gate / "work-runs").read_text() == "1"
    assert (gate / "finish-runs").read_text() == "1"


async def test_request_input_outside_a_task_is_a_clear_capability_error(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("ask_one_midway", tasks=False, capabilities=ELICIT)
    assert reply.error["code"] == -32021


async def until_file(path: Path, *, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.05)


async def test_answers_signalled_to_temporal_before_the_question_are_ignored(
    front_mcp: TaskCalls, temporal_client: Client, gate: Path
) -> None:
    created = await front_mcp.start("survey", {"gate": str(gate)}, capabilities=ELICIT)
    task_id = created["taskId"]
    await until_file(gate / "attempts")  # the round runs; it asks nothing until `go`
    early = {"color": accept(approve=True), "size": accept(approve=True), "never-asked": accept(approve=True)}
    await signal_answers(temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)), early)
    (gate / "go").write_text("1")
    asked = await front_mcp.wait_for(task_id, lambda t: t["status"] != "working")
    assert asked["status"] == "input_required", asked
    # Under the tool's own keys: an early answer taken as given would have pushed them aside (`r0/...`).
    assert set(asked["inputRequests"]) == {"color", "size"}
    assert not (gate / "answered").exists(), "the next round ran on answers nobody gave to a question"
    await front_mcp.update(task_id, {"color": accept(approve=True), "size": accept(approve=False)})
    await until_file(gate / "answered")
    (gate / "release").write_text("1")
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "done"
    assert (gate / "attempts").read_text() == "1"


async def signals_of(temporal_client: Client, task_id: str) -> list[Any]:
    handle = temporal_client.get_workflow_handle(f"mcp-task/anonymous/{task_id}")
    return [
        event
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]


async def test_an_answer_that_does_not_match_the_requested_schema_is_refused(
    front_mcp: TaskCalls, temporal_client: Client
) -> None:
    created = await front_mcp.start("ask_one_midway", capabilities=ELICIT)
    task_id = created["taskId"]
    task = await wait_input(front_mcp, task_id)
    [(key, request)] = task["inputRequests"].items()
    assert request["params"]["requestedSchema"]["properties"]["approve"]["type"] == "boolean"
    for wrong in (accept(approve="yes"), accept(), {"action": "accept"}, accept(approve=None)):
        refused = await front_mcp.update(task_id, {key: wrong})
        assert refused.error["code"] == -32602, wrong
        assert refused.error["data"]["key"] == key
    still = (await front_mcp.get(task_id)).result
    assert still["status"] == "input_required" and set(still["inputRequests"]) == {key}
    assert await signals_of(temporal_client, task_id) == [], "a refused answer never reaches the workflow"
    accepted = await front_mcp.update(task_id, {key: accept(approve=True)})
    assert accepted.result["resultType"] == "complete"
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "accept"
    assert len(await signals_of(temporal_client, task_id)) == 1


@pytest.mark.parametrize(
    ("tool", "wrong"),
    [
        ("sample_river", {"role": "assistant", "content": "the Danube"}),
        ("count_roots", {"roots": [{"name": "no uri"}]}),
    ],
)
async def test_sampling_and_roots_answers_must_be_their_result_types(
    front_mcp: TaskCalls, temporal_client: Client, tool: str, wrong: dict[str, Any]
) -> None:
    created = await front_mcp.start(tool, capabilities=ALL_KINDS)
    task = await wait_input(front_mcp, created["taskId"])
    [key] = task["inputRequests"]
    refused = await front_mcp.update(created["taskId"], {key: wrong})
    assert refused.error["code"] == -32602
    assert (await front_mcp.get(created["taskId"])).result["status"] == "input_required"
    assert await signals_of(temporal_client, created["taskId"]) == []
    await front_mcp.cancel(created["taskId"])


async def test_questions_and_answers_are_in_the_workflow_history(front_mcp: TaskCalls, temporal_client: Client) -> None:
    created = await front_mcp.start("greet_someone", capabilities=ELICIT)
    task = await wait_input(front_mcp, created["taskId"])
    [key] = task["inputRequests"]
    await front_mcp.update(created["taskId"], {key: accept(name="Grace")})
    await front_mcp.wait_for(created["taskId"])
    signals = await signals_of(temporal_client, created["taskId"])
    assert len(signals) == 1
    [answer] = await temporal_client.data_converter.decode(
        signals[0].workflow_execution_signaled_event_attributes.input.payloads
    )
    assert answer == {key: accept(name="Grace")}


async def test_mrtr_rounds_before_the_task_then_a_task_without_request_state(front_mcp: TaskCalls) -> None:
    first = await front_mcp.call_tool("greet_first", capabilities=ELICIT)
    round_one = first.result
    assert round_one["resultType"] == "input_required" and "taskId" not in round_one
    [key] = round_one["inputRequests"]
    second = await front_mcp.client.request(
        "tools/call",
        {
            "name": "greet_first",
            "arguments": {},
            "inputResponses": {key: accept(name="Alice")},
            "requestState": round_one["requestState"],
        },
        capabilities=ELICIT,
    )
    created = second.result
    assert created["resultType"] == "task"
    assert "requestState" not in created and "inputRequests" not in created
    done = await front_mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "Hello, Alice, from a task!"
    assert "requestState" not in done


async def test_request_state_sealed_by_one_front_is_accepted_by_another(open_front: OpenFront) -> None:
    keys = ["k" * 43]
    sealer, opener = await open_front(request_state_keys=keys), await open_front(request_state_keys=keys)
    async with sealer.http() as http_a, opener.http() as http_b:
        front_a, front_b = sealer.calls(http_a), opener.calls(http_b)
        round_one = (await front_a.call_tool("greet_first", capabilities=ELICIT)).result
        [key] = round_one["inputRequests"]
        params = {
            "name": "greet_first",
            "arguments": {},
            "inputResponses": {key: accept(name="Bo")},
            "requestState": round_one["requestState"],
        }
        created = (await front_b.client.request("tools/call", params, capabilities=ELICIT)).result
        assert created["resultType"] == "task"
        done = await front_a.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "Hello, Bo, from a task!"


@pytest.mark.slow
async def test_worker_restart_while_waiting_loses_nothing(stack_factory: Any, http: Any, gate: Path) -> None:
    private: Stack = stack_factory()
    worker = private.add_worker()
    mcp = TaskCalls(HttpMcp(private.add_front(), http))
    created = await mcp.start("release", {"gate": str(gate)}, capabilities=ELICIT)
    task = await wait_input(mcp, created["taskId"])
    worker.kill()
    private.add_worker()
    [key] = task["inputRequests"]
    await mcp.update(created["taskId"], {key: accept(approve=True)})
    second = await mcp.wait_for(
        created["taskId"], lambda t: t["status"] == "input_required" and key not in t["inputRequests"]
    )
    [second_key] = second["inputRequests"]
    await mcp.update(created["taskId"], {second_key: accept(approve=True)})
    done = await mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "published build 1"
    assert (gate / "build-runs").read_text() == "1"


@pytest.mark.slow
async def test_front_restart_between_question_and_answer(stack_factory: Any, stack: Stack, http: Any) -> None:
    private: Stack = stack_factory()
    private.task_queue = stack.task_queue
    port = free_port()
    url = private.add_front(port=port)
    mcp = TaskCalls(HttpMcp(url, http))
    created = await mcp.start("greet_someone", capabilities=ELICIT)
    task = await wait_input(mcp, created["taskId"])
    private.fronts[0][0].kill()
    mcp = TaskCalls(HttpMcp(private.add_front(port=port), http))
    [key] = task["inputRequests"]
    await mcp.update(created["taskId"], {key: accept(name="Lin")})
    done = await mcp.wait_for(created["taskId"])
    assert done["result"]["content"][0]["text"] == "Hello, Lin!"
