"""Pure logic of Nexus tools: endpoint routes, the reply headers, the task workflow's input, registration."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal import TasksExtension
from mcp_tasks_temporal.ops.cli import parse
from mcp_tasks_temporal.ops.dev.embedded_temporal import dev_server_command
from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute
from mcp_tasks_temporal.temporal.nexus_contract import (
    NONCE_HEADER,
    REPLY_ENDPOINT_HEADER,
    REPLY_MEMO,
    TASK_WORKFLOW_HEADER,
    Caller,
    HandlerWorkflow,
    NexusCall,
    ReplyRoute,
    caller_of_links,
    handler_of_token,
    reply_memo,
    reply_route,
)
from mcp_tasks_temporal.temporal.nexus_tools import NexusToolOptions
from tests.cli_runs import settings_of


@dataclass
class Order:
    item: str
    quantity: int = 1


def test_endpoint_routes_parse_and_refuse_what_is_not_name_namespace_queue() -> None:
    assert EndpointRoute.parse("team=ns/q") == EndpointRoute("team", "ns", "q")
    assert EndpointRoute.parse("team=ns/mcp-tasks/app") == EndpointRoute("team", "ns", "mcp-tasks/app")
    for bad in ("team", "team=ns", "=ns/q", "team=/q", "team=ns/"):
        with pytest.raises(ValueError):
            EndpointRoute.parse(bad)


def test_dev_takes_namespaces_endpoints_and_a_reply_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    args = settings_of(["dev", "--nexus-namespace", "a", "--nexus-endpoint", "e=a/q", "--nexus-reply-endpoint", "r"])
    assert args.nexus_namespace == ["a"] and args.nexus_endpoint == [EndpointRoute("e", "a", "q")]
    assert args.nexus_reply_endpoint == "r"
    monkeypatch.setenv("MCP_TASKS_NEXUS_ENDPOINTS", "e=a/q,f=b/p")
    monkeypatch.setenv("MCP_TASKS_NEXUS_REPLY_ENDPOINT", "reply")
    from_env = settings_of(["serve", "--app", "x:app"])
    assert from_env.nexus_reply_endpoint == "reply"
    assert settings_of(["dev"]).nexus_endpoint == [
        EndpointRoute("e", "a", "q"),
        EndpointRoute("f", "b", "p"),
    ]
    assert parse(["dev", "--nexus-endpoint", "nonsense"]) == 2


def test_the_embedded_server_creates_every_namespace_it_is_given() -> None:
    command = dev_server_command(
        host="127.0.0.1", port=1, ui_port=None, db_path=None, namespaces=["default", "team"], search_attributes=False
    )
    assert command.count("--namespace") == 1 and command[command.index("--namespace") + 1] == "team"


def test_the_reply_route_needs_all_three_headers_in_any_case_and_the_memo_keeps_only_the_endpoint() -> None:
    headers = {REPLY_ENDPOINT_HEADER.upper(): "reply", TASK_WORKFLOW_HEADER: "mcp-task/o/t", NONCE_HEADER: "n"}
    route = reply_route(headers)
    assert route == ReplyRoute(endpoint="reply", task="mcp-task/o/t", nonce="n")
    assert route is not None
    assert reply_memo(route) == {REPLY_MEMO: {"endpoint": "reply"}}  # no nonce, no task ID where a listing shows it
    assert reply_route({TASK_WORKFLOW_HEADER: "mcp-task/o/t", NONCE_HEADER: "n"}) is None
    assert reply_route({}) is None


def test_the_handler_is_the_workflow_a_workflow_run_token_names() -> None:
    token = (
        "eyJ0IjoxLCJucyI6InJlcG9ydHMtdGVhbSIsIndpZCI6InJlcG9ydC0xIn0"  # {"t":1,"ns":"reports-team","wid":"report-1"}
    )
    assert handler_of_token(token) == HandlerWorkflow("reports-team", "report-1")
    not_a_workflow = "eyJ0IjoyLCJucyI6Im4iLCJ3aWQiOiJ3In0"  # {"t":2,...}: an update, say
    for bad in (None, "", "%%%", "bm90IGpzb24", not_a_workflow):
        assert handler_of_token(bad) is None


def test_the_caller_is_the_one_workflow_event_link_and_nothing_else() -> None:
    link = "temporal:///namespaces/team%2Fa/workflows/report%2F1/run-1/history?referenceType=EventReference&eventID=7"
    assert caller_of_links([link]) == Caller("team/a", "report/1", "run-1")
    forged = "temporal:///namespaces/team/workflows/victim/run-2/history"
    assert caller_of_links([link, forged]) is None  # a sender may add links of its own beside Temporal's
    assert caller_of_links([]) is None  # not a workflow
    for bad in (
        "https:///namespaces/n/workflows/w/r/history",
        "temporal:///namespaces/n/workflows/w/r",
        "temporal:///namespaces/n/activities/a/r/details",
        "temporal:///namespaces//workflows/w/r/history",
    ):
        assert caller_of_links([bad]) is None, bad


def options(reply: str | None = None, input_type: object = Order) -> NexusToolOptions:
    return NexusToolOptions.for_operation(
        endpoint="team",
        service="orders",
        operation="place",
        input_type=input_type,
        output_type=str,
        name="place_order",
        description="",
        policy="optional",
        ttl_ms=None,
        poll_interval_ms=None,
        schedule_to_close_s=60,
        reply_endpoint=lambda: reply,
    )


def test_the_task_workflow_gets_the_operation_and_the_input_in_json_form() -> None:
    [call] = options("reply").workflow_args({"item": "pen"})
    assert call == NexusCall("team", "orders", "place", {"item": "pen", "quantity": 1}, "reply", 60)
    [plain] = options(input_type=int).workflow_args({"input": 3})
    assert plain.input == 3 and plain.reply_endpoint is None
    [nothing] = options(input_type=None).workflow_args({})
    assert nothing.input is None


def test_a_nexus_tool_is_checked_when_registered() -> None:
    tasks = TasksExtension()
    MCPServer("units", extensions=[tasks])
    tasks.nexus_tool(endpoint="team", service="orders", operation="place", name="place", input_type=Order)
    assert isinstance(tasks.workflow_tools["place"], NexusToolOptions)
    with pytest.raises(ValueError, match="already registered"):
        tasks.nexus_tool(endpoint="team", service="orders", operation="place", name="place")
    with pytest.raises(ValueError, match="endpoint"):
        tasks.nexus_tool(endpoint="", service="orders", operation="place", name="other")
    with pytest.raises(ValueError, match="schedule_to_close_timeout"):
        tasks.nexus_tool(endpoint="t", service="s", operation="o", name="third", schedule_to_close_timeout=0)
