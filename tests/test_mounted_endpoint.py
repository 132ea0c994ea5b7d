"""A team's own Starlette service with the MCP endpoint mounted at `/mcp` beside its own routes, over real HTTP.

The service has its own lifespan and its own Temporal client, as docs/operations.md shows: the lifespan
connects the client, mounts `mcp_endpoint(app, client)` and enters the endpoint's lifespan. uvicorn serves it
on 127.0.0.1 in the test process; the app's workers run there too, as any worker does. Through the mounted
endpoint: a task tool's task with a question answered by `tasks/update`, a workflow tool's task, a
`tasks/cancel`, and a push (`subscriptions/listen`, then `notifications/tasks` to the end). Two apps' endpoints
in one process share nothing, not even their settings.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import INVALID_REQUEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from mcp_tasks_temporal import FrontSettings, TasksExtension, mcp_endpoint
from tests.loopback import serving
from tests.team_service_app import app as team_mcp_app
from tests.test_push import collect_until_terminal, http_listen, listen_message
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}


@pytest.fixture(scope="module")
def app_spec() -> str:
    """The team's app: its workers run in this process, on `app_queue`, as any worker runs it."""
    return "tests.team_service_app:app"


def team_service(temporal: str, queue: str) -> Starlette:
    """The team's service: its own route, its own lifespan and client, and the MCP endpoint at `/mcp`."""

    async def orders(request: Request) -> JSONResponse:
        return JSONResponse({"orders": ["o-1", "o-2"]})

    @asynccontextmanager
    async def lifespan(service: Starlette) -> AsyncGenerator[None]:
        client = await Client.connect(temporal, data_converter=pydantic_data_converter)
        endpoint = mcp_endpoint(team_mcp_app, client, settings=FrontSettings(task_queue=queue), path="/")
        service.router.routes.append(Mount("/mcp", app=endpoint))
        async with endpoint.router.lifespan_context(endpoint):
            yield

    return Starlette(routes=[Route("/orders", orders)], lifespan=lifespan)


@pytest.fixture(scope="module")
async def service_url(temporal: str, app_queue: str) -> AsyncIterator[str]:
    async with serving(team_service(temporal, app_queue)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
async def mcp(service_url: str) -> AsyncIterator[TaskCalls]:
    async with httpx.AsyncClient(timeout=30) as http:
        yield TaskCalls(HttpMcp(f"{service_url}/mcp/", http))


async def test_the_teams_own_route_answers_beside_the_endpoint(service_url: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{service_url}/orders")).json() == {"orders": ["o-1", "o-2"]}
        ready = await http.get(f"{service_url}/mcp/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


async def test_a_task_tools_question_is_answered_with_tasks_update(mcp: TaskCalls) -> None:
    created = await mcp.start("greet", capabilities=ELICIT)
    asking = await mcp.wait_for(created["taskId"], ["input_required"])
    [key] = asking["inputRequests"]
    answered = await mcp.update(created["taskId"], {key: {"action": "accept", "content": {"name": "Ada"}}})
    assert answered.result["resultType"] == "complete"
    done = await mcp.wait_for(created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"


async def test_a_workflow_tools_task_runs_to_its_result(mcp: TaskCalls) -> None:
    created = await mcp.start("tally", {"steps": 2})
    done = await mcp.wait_for(created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"result": 5}


async def test_tasks_cancel_stops_a_running_task(mcp: TaskCalls) -> None:
    created = await mcp.start("wait_for_cancel")
    await mcp.wait_for(created["taskId"], lambda task: task.get("statusMessage") == "waiting to be cancelled")
    assert (await mcp.cancel(created["taskId"])).result["resultType"] == "complete"
    done = await mcp.wait_for(created["taskId"])
    assert done["status"] == "cancelled", done


async def test_a_listen_pushes_each_change_to_the_end(service_url: str, mcp: TaskCalls) -> None:
    created = await mcp.start("greet", capabilities=ELICIT)
    task_id = created["taskId"]
    seen: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=30) as http:
        async with http_listen(f"{service_url}/mcp/", http, listen_message([task_id])) as frames:
            first = await anext(frames)
            assert first["method"] == "notifications/subscriptions/acknowledged"
            assert first["params"]["notifications"]["taskIds"] == [task_id]
            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    group.start_soon(collect_until_terminal, frames, task_id, seen)
                    asking = await mcp.wait_for(task_id, ["input_required"])
                    [key] = asking["inputRequests"]
                    await mcp.update(task_id, {key: {"action": "accept", "content": {"name": "Grace"}}})
    statuses = [frame["params"]["status"] for frame in seen if frame.get("method") == "notifications/tasks"]
    assert "input_required" in statuses and statuses[-1] == "completed", statuses


# -- two apps in one process ----------------------------------------------------------------------------


def _app(name: str, tool: str) -> MCPServer[Any]:
    server = MCPServer(name, version="0.0.1", extensions=[TasksExtension()])

    def answer() -> str:
        return name

    server.add_tool(answer, name=tool)
    return server


async def test_two_apps_mounted_in_one_process_share_nothing(temporal_client: Client) -> None:
    """Each endpoint serves its own app, with its own settings; driven in-process, as httpx's ASGI transport does."""
    small = mcp_endpoint(
        _app("first-app", "first_tool"), temporal_client, settings=FrontSettings(max_body_bytes=2048), path="/"
    )
    large = mcp_endpoint(_app("second-app", "second_tool"), temporal_client, path="/")
    service = Starlette(routes=[Mount("/first", app=small), Mount("/second", app=large)])
    padding = {"padding": "x" * 4096}
    async with small.router.lifespan_context(small), large.router.lifespan_context(large):
        transport = httpx.ASGITransport(service)
        async with httpx.AsyncClient(transport=transport, base_url="http://service", timeout=10) as http:
            first, second = HttpMcp("http://service/first/", http), HttpMcp("http://service/second/", http)
            assert [t["name"] for t in (await first.request("tools/list")).result["tools"]] == ["first_tool"]
            assert [t["name"] for t in (await second.request("tools/list")).result["tools"]] == ["second_tool"]
            refused = await first.request("tools/list", padding)
            assert refused.status == 413 and refused.error["code"] == INVALID_REQUEST
            assert refused.error["data"] == {"maxBodyBytes": 2048}
            taken = await second.request("tools/list", padding)
            assert [t["name"] for t in taken.result["tools"]] == ["second_tool"]
