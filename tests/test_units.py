"""Pure logic, no servers: wire shapes, IDs, capability rules, option resolution, the public surface."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from mcp_tasks_temporal.front.extension import TasksExtension, ToolTaskOptions
from mcp_tasks_temporal.temporal.contract import ActivityPolicy, detailed_task, to_iso
from mcp_tasks_temporal.temporal.ids import ANONYMOUS_OWNER, UNKEYED, is_task_id, new_task_id
from mcp_tasks_temporal.temporal.inputs import as_input_request, missing_capability_error, response_problem
from mcp_tasks_temporal.temporal.progress import progress_message

ELICIT = {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object"}}}
APPROVE = {
    "method": "elicitation/create",
    "params": {
        "message": "Publish?",
        "requestedSchema": {
            "type": "object",
            "properties": {"approve": {"type": "boolean"}, "email": {"type": "string", "format": "email"}},
            "required": ["approve"],
        },
    },
}
URL_ELICIT = {
    "method": "elicitation/create",
    "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e1"},
}
ACCEPT_ANYTHING = {"action": "accept", "content": {"x": 1}}


def base(
    status: str,
    *,
    status_message: str | None = None,
    input_requests: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return detailed_task(
        task_id="t",
        status=status,
        created_at_ms=1_000,
        last_updated_at_ms=2_000,
        ttl_ms=None,
        poll_interval_ms=500,
        status_message=status_message,
        input_requests=input_requests,
        result=result,
        error=error,
    )


def test_detailed_task_carries_only_the_field_of_its_status() -> None:
    result: dict[str, Any] = {"content": [], "isError": False}
    error: dict[str, Any] = {"code": -1, "message": "x"}
    requests: dict[str, Any] = {"k": ELICIT}
    everything: dict[str, Any] = {"result": result, "error": error, "input_requests": requests}
    assert {"result", "error", "inputRequests"} & base("working", **everything).keys() == set()
    assert base("cancelled", **everything).keys() & {"result", "error", "inputRequests"} == set()
    assert base("completed", **everything)["result"] == result
    assert "error" not in base("completed", **everything)
    assert base("failed", **everything)["error"] == error
    assert base("input_required", **everything)["inputRequests"] == requests


def test_detailed_task_renders_iso_times_and_null_ttl() -> None:
    task = base("working")
    assert task["createdAt"] == "1970-01-01T00:00:01.000Z"
    assert task["lastUpdatedAt"] == "1970-01-01T00:00:02.000Z"
    assert task["ttlMs"] is None and task["pollIntervalMs"] == 500
    assert to_iso(1_764_682_800_123) == "2025-12-02T13:40:00.123Z"


def test_last_updated_is_never_before_creation() -> None:
    task = detailed_task(
        task_id="t", status="working", created_at_ms=5_000, last_updated_at_ms=1, ttl_ms=1, poll_interval_ms=1
    )
    assert task["lastUpdatedAt"] == task["createdAt"]


def test_task_ids_are_uuid4_with_122_random_bits() -> None:
    ids = {new_task_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(uuid.UUID(i).version == 4 and is_task_id(i) for i in ids)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "x",
        "00000000-0000-0000-0000-000000000000",
        "82d7e09e-ef2a-11f1-bf61-02fc00000001",  # a uuid1
        "5B3A5DD1-B9D5-4418-9EEC-0188F9120714",  # a uuid4, upper case
        "../x",
    ],
)
def test_anything_but_a_canonical_uuid4_is_not_a_task_id(value: str) -> None:
    assert not is_task_id(value)


def test_workflow_ids_separate_principals_and_hide_them() -> None:
    task = new_task_id()
    assert UNKEYED.workflow_id(task, None) == f"mcp-task/{ANONYMOUS_OWNER}/{task}"
    alice, bob = UNKEYED.workflow_id(task, "alice@example.com"), UNKEYED.workflow_id(task, "bob@example.com")
    assert alice != bob
    assert "alice" not in alice
    assert UNKEYED.owner_key("alice@example.com") == UNKEYED.owner_key("alice@example.com")


@pytest.mark.parametrize(
    ("capabilities", "request_", "missing"),
    [
        ({"elicitation": {}}, ELICIT, None),
        ({"elicitation": {"form": {}}}, ELICIT, None),
        ({"elicitation": {"url": {}}}, ELICIT, {"elicitation": {"form": {}}}),
        (
            {"elicitation": {"form": {}}},
            {"method": "elicitation/create", "params": {"mode": "url"}},
            {"elicitation": {"url": {}}},
        ),
        ({}, ELICIT, {"elicitation": {}}),
        ({"sampling": {}}, {"method": "sampling/createMessage", "params": {}}, None),
        ({"elicitation": {}}, {"method": "sampling/createMessage", "params": {}}, {"sampling": {}}),
        ({"roots": {}}, {"method": "roots/list"}, None),
        (None, {"method": "roots/list"}, {"roots": {}}),
    ],
)
def test_input_requests_need_the_matching_client_capability(
    capabilities: object, request_: dict[str, object], missing: dict[str, object] | None
) -> None:
    error = missing_capability_error(request_, capabilities)
    if missing is None:
        assert error is None
    else:
        assert error is not None and error.error.code == -32021
        assert error.error.data == {"requiredCapabilities": missing}


def test_unknown_input_request_methods_are_refused() -> None:
    error = missing_capability_error({"method": "tools/call"}, {"elicitation": {}})
    assert error is not None and error.error.code == -32602


@pytest.mark.parametrize(
    ("request_", "response", "valid"),
    [
        (ELICIT, {"action": "accept", "content": {"a": 1}}, True),
        (ELICIT, {"action": "decline"}, True),
        (ELICIT, {"action": "maybe"}, False),
        (ELICIT, "accept", False),
        (
            {"method": "sampling/createMessage"},
            {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
            True,
        ),
        ({"method": "sampling/createMessage"}, {"role": "assistant"}, False),
        ({"method": "roots/list"}, {"roots": [{"uri": "file:///x"}]}, True),
        ({"method": "roots/list"}, {"roots": "all"}, False),
        ({"method": "other"}, {}, False),
        (APPROVE, {"action": "accept", "content": {"approve": True, "email": "ops@example.com"}}, True),
        (APPROVE, {"action": "accept", "content": {"approve": "yes"}}, False),
        (APPROVE, {"action": "accept", "content": {}}, False),
        (APPROVE, {"action": "accept"}, False),
        (APPROVE, {"action": "accept", "content": {"approve": True, "email": "not an address"}}, False),
        (APPROVE, {"action": "decline"}, True),
        (APPROVE, {"action": "cancel"}, True),
        (URL_ELICIT, {"action": "accept"}, True),
        ({**APPROVE, "params": {"message": "?", "requestedSchema": {"type": "nonsense"}}}, ACCEPT_ANYTHING, True),
    ],
)
def test_answers_are_validated_against_the_question(request_: object, response: object, valid: bool) -> None:
    assert (response_problem(request_, response) is None) is valid


def test_a_refused_answer_says_which_field_is_wrong() -> None:
    problem = response_problem(APPROVE, {"action": "accept", "content": {"approve": "yes"}})
    assert problem is not None and problem.startswith("content/approve:")


def test_input_requests_are_normalised_to_method_and_params() -> None:
    assert as_input_request({"method": "roots/list"}) == {"method": "roots/list", "params": {}}
    with pytest.raises(ValueError):
        as_input_request({"params": {}})


def test_progress_reports_render_as_status_lines_that_read_naturally_with_or_without_a_total() -> None:
    assert progress_message(2, 6, "compile") == "compile (2/6)"
    assert progress_message(2, 6, None) == "2 of 6 done"
    assert progress_message(40, None, "indexing") == "indexing (40 so far)"
    assert progress_message(3, None, None) == "3 done so far"
    assert progress_message(0.5, 0, None) == "0.5 done so far", "a total of 0 is no total"
    for total in (None, 0, 6):
        for message in (None, "", "step"):
            assert "None" not in progress_message(1, total, message)


def test_tool_options_inherit_extension_defaults_unless_set() -> None:
    tasks = TasksExtension(default_ttl_ms=10_000, default_poll_interval_ms=300)
    tasks.enable("a", "optional")
    tasks.enable(
        "b",
        ToolTaskOptions(
            policy="required", ttl_ms=None, poll_interval_ms=50, activity=ActivityPolicy(maximum_attempts=9)
        ),
    )
    a, b = tasks.options_for("a"), tasks.options_for("b")
    assert a is not None and (a.ttl_ms, a.poll_interval_ms, a.activity) == (10_000, 300, ActivityPolicy())
    assert b is not None and (b.ttl_ms, b.poll_interval_ms, b.policy) == (None, 50, "required")
    assert tasks.options_for("c") is None


@pytest.mark.parametrize(
    "bad", [{"policy": "sometimes"}, {"ttl_ms": 0}, {"poll_interval_ms": -1}, {"progress_timeout": 0}]
)
def test_invalid_tool_options_are_refused_at_declaration(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ToolTaskOptions(**bad)


def test_decorator_registers_under_the_function_or_given_name() -> None:
    tasks = TasksExtension()

    @tasks.tool(policy="required")
    def build() -> None: ...

    @tasks.tool(name="renamed")
    def other() -> None: ...

    assert set(tasks.task_tools) == {"build", "renamed"}
    assert build.__name__ == "build" and other.__name__ == "other"


def _state(status: str, at: str, message: str | None = None) -> Any:
    from mcp_tasks_temporal.client._models import DetailedTask

    return DetailedTask.model_validate(
        {
            "taskId": "t",
            "status": status,
            "statusMessage": message,
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": at,
            "ttlMs": None,
        }
    )


def test_a_stale_read_never_moves_the_shown_status_backwards() -> None:
    from mcp_tasks_temporal.client._handle import _older  # pyright: ignore[reportPrivateUsage]

    deploying = _state("working", "2026-01-01T00:00:05Z", "deploying")
    ready = _state("working", "2026-01-01T00:00:03Z", "ready to deploy")
    assert _older(ready, deploying), "an older message of the same status is stale"
    assert not _older(deploying, ready)
    # A status change is always news (its time comes from another clock than the tool's messages).
    asking = _state("input_required", "2026-01-01T00:00:04Z")
    assert not _older(asking, deploying)
    done = _state("completed", "2026-01-01T00:00:06Z")
    assert _older(deploying, done) and _older(_state("working", "2026-01-01T00:00:09Z"), done), "terminal is final"


def test_a_tool_progress_timeout_lands_in_its_activity_policy() -> None:
    tasks = TasksExtension(default_activity=ActivityPolicy(maximum_attempts=5, progress_timeout_s=60))
    tasks.enable("quiet", ToolTaskOptions(progress_timeout=5))
    tasks.enable("default")
    quiet, default = tasks.options_for("quiet"), tasks.options_for("default")
    assert quiet is not None and quiet.activity == ActivityPolicy(maximum_attempts=5, progress_timeout_s=5)
    assert default is not None and default.activity == ActivityPolicy(maximum_attempts=5, progress_timeout_s=60)
