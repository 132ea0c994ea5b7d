"""The Python client (`mcp_tasks_temporal.client`) against our server, over Streamable HTTP and stdio.

Over HTTP the client talks to the fixture app's front in this process, served on a loopback port (`front_url`),
and its tasks run on workers in this process. Over stdio it starts `serve --transport stdio` as its users do,
a process whose tasks the same workers run; a few tests take both transports, and a client killed mid-wait
is a child process.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)
from pydantic import FileUrl

from mcp_tasks_temporal import BearerAuth
from mcp_tasks_temporal.client import (
    AuthenticationError,
    DetailedTask,
    Journal,
    ServerUnreachableError,
    TaskCancelledError,
    TaskFailedError,
    TaskHandle,
    TasksClient,
    TasksClientExtension,
    WaitOptions,
)
from mcp_tasks_temporal.client._client import translate_session_error
from mcp_tasks_temporal.client._handle import poll_delay_s
from mcp_tasks_temporal.client._journal import server_label
from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from tests.clock import ManualClock
from tests.conftest import OpenApp, OpenFront
from tests.front_app import InProcessFront
from tests.processes import CLI, FIXTURE_APP, REPO_ROOT, Process, child_env, free_port

pytestmark = pytest.mark.anyio

UNKNOWN = "00000000-0000-4000-8000-000000000000"
EXTENSION_ID = "io.modelcontextprotocol/tasks"
WAIT = 30


@pytest.fixture
def stdio_server(temporal: str, app_queue: str) -> StdioServerParameters:
    """A `serve --transport stdio` process of the fixture app, for a client to start; the module's workers run its
    tasks."""
    command = [*CLI, "serve", "--transport", "stdio", "--temporal", temporal, "--task-queue", app_queue]
    return StdioServerParameters(
        command=command[0], args=[*command[1:], "--app", FIXTURE_APP], env=child_env(), cwd=str(REPO_ROOT)
    )


@pytest.fixture(params=["http", "stdio"])
def either_transport(request: pytest.FixtureRequest, front_url: str) -> str | StdioServerParameters:
    """The front over HTTP, then a stdio server: for what the client does on both transports."""
    return front_url if request.param == "http" else request.getfixturevalue("stdio_server")


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite3")


@dataclass
class Answers:
    """The caller's input handlers; they record every request they were given."""

    asked: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])

    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append((str(context.request_id), "elicitation/create"))
        wanted = {"name": "Ada", "color": "red", "size": "XL"}
        properties = cast(dict[str, Any], getattr(params, "requested_schema", {})).get("properties", {})
        return ElicitResult(action="accept", content={key: wanted[key] for key in properties})

    async def sample(self, context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        self.asked.append((str(context.request_id), "sampling/createMessage"))
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="the Danube"), model="test")

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.asked.append((str(context.request_id), "roots/list"))
        return ListRootsResult(roots=[Root(uri=FileUrl("file:///src")), Root(uri=FileUrl("file:///docs"))])


def connect(
    server: str | StdioServerParameters, journal: Journal | None, answers: Answers | None = None, **kw: Any
) -> TasksClient:
    answers = answers or Answers()
    return TasksClient(
        server,
        journal=journal,
        elicitation_callback=answers.elicit,
        sampling_callback=answers.sample,
        list_roots_callback=answers.roots,
        **kw,
    )


def text(result: CallToolResult) -> str:
    return next(block.text for block in result.content if isinstance(block, TextContent))


async def until(check: Any, what: str, timeout: float = WAIT) -> None:
    """Bounded wait for in-process or on-disk state another task or process changes."""
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


# -- results ----------------------------------------------------------------------------------


async def test_sync_tool_answers_without_a_task(front_url: str, journal: Journal) -> None:
    async with connect(front_url, journal) as client:
        assert client.offers_tasks
        assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        plain = await client.start_tool("never_task", {"x": 1})
        assert isinstance(plain, CallToolResult) and plain.structured_content == {"result": 2}
    assert journal.entries() == []


async def test_task_result_is_the_final_call_tool_result(front_url: str, journal: Journal) -> None:
    seen: list[DetailedTask] = []
    async with connect(front_url, journal) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool("double", {"x": 21}, on_change=seen.append)
            required = await client.call_tool("needs_task", {"x": 2})
    assert result.structured_content == {"value": 42} and not result.is_error
    assert required.structured_content == {"result": 6}, "the extension is declared on the call"
    assert seen[-1].status == "completed"
    assert journal.entries() == [], "a task seen terminal is crossed out"


async def test_tool_error_is_a_completed_result_with_is_error(front_url: str, journal: Journal) -> None:
    async with connect(front_url, journal) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool("tool_error", {"reason": "no such ref"})
    assert result.is_error
    assert "tool_error" in text(result)


async def test_failed_task_raises_its_json_rpc_error(front_url: str, journal: Journal) -> None:
    async with connect(front_url, journal) as client:
        with anyio.fail_after(WAIT), pytest.raises(TaskFailedError) as raised:
            await client.call_tool("protocol_error", {"code": -32042})
    assert isinstance(raised.value, MCPError)
    assert raised.value.code == -32042
    assert raised.value.data == {"retryable": False}
    assert raised.value.task.status == "failed"
    assert journal.entries() == []


async def test_input_requests_of_each_kind_go_to_their_handler_once(either_transport: Any, journal: Journal) -> None:
    answers = Answers()
    keys_per_call: list[list[str]] = []

    async def call(tool: str) -> str:
        before = len(answers.asked)
        result = text(await client.call_tool(tool))
        keys_per_call.append([key for key, _ in answers.asked[before:]])
        return result

    async with connect(either_transport, journal, answers) as client:
        with anyio.fail_after(WAIT):
            assert await call("greet_someone") == "Hello, Ada!"
            assert await call("sample_river") == "The model said: the Danube"
            assert await call("count_roots") == "2 roots: file:///src, file:///docs"
            assert await call("pick_variant") == "XL red"
            # Questions asked on the tools/call itself (MRTR) before the task exists, through the same handler.
            assert await call("greet_first") == "Hello, Ada, from a task!"
    methods = [method for _, method in answers.asked]
    assert methods.count("elicitation/create") == 4
    assert methods.count("sampling/createMessage") == 1 and methods.count("roots/list") == 1
    for keys in keys_per_call:
        assert len(keys) == len(set(keys)), f"each key of a call is answered once: {keys}"
    # The handler sees the key the tool asked under (its resolver's), not a task-level rewrite of it.
    assert keys_per_call[0] == ["tests.fixture_app:ask_name"]


# -- handles -----------------------------------------------------------------------------------


async def test_handle_yields_each_change_until_terminal(front_url: str, journal: Journal, gate: Path) -> None:
    async with connect(front_url, journal) as client:
        handle = await client.start_tool("gated", {"gate": str(gate)})
        assert isinstance(handle, TaskHandle)
        assert [e.task_id for e in journal.entries()] == [handle.task_id], "written down on arrival"
        seen: list[DetailedTask] = []
        with anyio.fail_after(WAIT):
            async for task in handle:
                seen.append(task)
                if task.status_message and not (gate / "release").exists():
                    (gate / "release").write_text("1")
            result = await handle.result()
    assert seen[0].status == "working"
    assert any(t.status == "working" and t.status_message for t in seen), "progress shows as statusMessage"
    assert seen[-1].status == "completed" and sum(t.terminal for t in seen) == 1
    assert text(result) == f"released {gate.name}"
    assert journal.entries() == []


async def test_cancel_through_the_handle_settles_cancelled(either_transport: Any, journal: Journal, gate: Path) -> None:
    async with connect(either_transport, journal) as client:
        handle = await client.start_tool("gated", {"gate": str(gate)})
        assert isinstance(handle, TaskHandle)
        await until(lambda: (gate / "started").exists(), "the tool to start")
        await handle.cancel()
        with anyio.fail_after(WAIT), pytest.raises(TaskCancelledError):
            await handle.result()
    assert (gate / "cancelled").exists(), "the tool itself was cancelled"
    assert journal.entries() == []


async def test_unknown_task_is_invalid_params(front_url: str, journal: Journal) -> None:
    async with connect(front_url, journal) as client:
        for operation in (client.task(UNKNOWN).get, client.task(UNKNOWN).cancel):
            with pytest.raises(MCPError) as raised:
                await operation()
            assert raised.value.code == -32602


async def test_expired_task_leaves_the_journal_and_the_server(
    open_front: OpenFront, journal: Journal, gate: Path
) -> None:
    clock = ManualClock()
    front = await open_front(clock=clock)
    async with front.http2() as http, connect(front.url, journal, http_client=http) as client:
        handle = await client.start_tool("short_lived", {"gate": str(gate)})
        assert isinstance(handle, TaskHandle) and handle.last is not None and len(journal.entries()) == 1
        ttl_ms = handle.last.ttl_ms
        assert ttl_ms == 2000
        # The journal drops it at its TTL, counted from its createdAt (the front's clock: the wall clock's now).
        expires_at = datetime.fromisoformat(handle.last.created_at).timestamp() + ttl_ms / 1000
        assert journal.prune(now=expires_at - 0.001) == 0 and len(journal.entries()) == 1
        assert journal.prune(now=expires_at) == 1 and journal.entries() == []
        clock.advance(timedelta(milliseconds=ttl_ms))
        with pytest.raises(MCPError) as gone:
            await handle.get()
        assert gone.value.code == -32602


# -- push and polling -------------------------------------------------------------------------


async def test_push_is_used_when_the_server_acknowledges_the_task(
    either_transport: Any, journal: Journal, gate: Path
) -> None:
    async with connect(either_transport, journal) as client:
        handle = await client.start_tool("gated", {"gate": str(gate)})
        assert isinstance(handle, TaskHandle)
        async with anyio.create_task_group() as group:
            group.start_soon(handle.result)
            await until(lambda: handle.stats.pushed >= 1 and handle.stats.source is not None, "a first pushed state")
            assert handle.stats.source == "push"
            (gate / "release").write_text("1")
        assert handle.last is not None and handle.last.status == "completed"
    assert handle.stats.source == "push"
    assert handle.stats.pushed >= 2
    assert handle.stats.polls == 0, "every change arrived on the listen stream"


async def test_polling_honours_the_poll_interval(front_url: str, journal: Journal, gate: Path) -> None:
    async with connect(front_url, journal, push=False) as client:
        handle = await client.start_tool("gated", {"gate": str(gate)})
        assert isinstance(handle, TaskHandle)
        interval_s = (handle.last.poll_interval_ms or 0) / 1000 if handle.last else 0
        assert interval_s > 0
        elapsed = 0.0
        async with anyio.create_task_group() as group:
            group.start_soon(handle.result)
            await until(lambda: handle.stats.polls >= 1, "the first poll")
            first = time.monotonic()
            await until(lambda: handle.stats.polls >= 5, "four more polls")
            elapsed = time.monotonic() - first
            (gate / "release").write_text("1")
    assert elapsed >= 4 * interval_s * 0.8, f"4 polls in {elapsed:.2f}s at {interval_s}s apart"
    assert handle.stats.source == "poll" and handle.stats.pushed == 0
    assert handle.last is not None and handle.last.status == "completed"


async def test_client_polls_when_the_acknowledgement_lacks_the_task(
    open_app: OpenApp, journal: Journal, gate: Path
) -> None:
    # `tests.client_fixture_app` does not push.
    quiet = await open_app("tests.client_fixture_app:app")
    async with quiet.http2() as http, connect(quiet.url, journal, http_client=http) as client:
        handle = await client.start_tool("held", {"gate": str(gate)})
        assert isinstance(handle, TaskHandle)
        async with anyio.create_task_group() as group:
            group.start_soon(handle.result)
            await until(lambda: handle.stats.polls >= 2, "polling to take over")
            (gate / "release").write_text("1")
    assert handle.stats.source == "poll" and handle.stats.pushed == 0
    assert handle.last is not None and handle.last.status == "completed"


def test_the_poll_delay_follows_the_latest_interval() -> None:
    options = WaitOptions()
    base = {"taskId": UNKNOWN, "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "x"}
    assert poll_delay_s(DetailedTask.model_validate({**base, "pollIntervalMs": 250}), options) == 0.25
    assert poll_delay_s(DetailedTask.model_validate({**base, "pollIntervalMs": 4000}), options) == 4.0
    assert poll_delay_s(DetailedTask.model_validate({**base, "pollIntervalMs": 1}), options) == 0.05, "floored"
    assert poll_delay_s(DetailedTask.model_validate(base), options) == 1.0, "the default when none is suggested"


# -- the wire ------------------------------------------------------------------------------------


async def test_every_request_declares_the_extension_and_task_requests_carry_mcp_name(
    front: InProcessFront, journal: Journal
) -> None:
    sent: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def record(request: httpx2.Request) -> None:
        if request.method == "POST":
            sent.append((dict(request.headers), json.loads(request.content)))

    async with front.http2(event_hooks={"request": [record]}) as http:
        async with connect(front.url, journal, push=False, http_client=http) as client:
            with anyio.fail_after(WAIT):
                assert text(await client.call_tool("greet_someone")) == "Hello, Ada!"
                done = await client.start_tool("double", {"x": 1})
                assert isinstance(done, TaskHandle)
                await done.result()
                await done.cancel()  # of a finished task: still acked
    methods = [body["method"] for _, body in sent]
    assert {"tools/call", "tasks/get", "tasks/update", "tasks/cancel"} <= set(methods)
    for headers, body in sent:
        caps = body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert EXTENSION_ID in caps["extensions"], body["method"]
        if body["method"].startswith("tasks/"):
            assert headers["mcp-method"] == body["method"]
            assert headers["mcp-name"] == body["params"]["taskId"]
        assert "task" not in body["params"], "no task-preference hint"


async def test_a_plain_sdk_client_with_the_extension_gets_task_results(front_url: str) -> None:
    async with Client(front_url, extensions=[TasksClientExtension()]) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool("double", {"x": 5})
    assert result.structured_content == {"value": 10}


async def test_a_rejected_token_is_an_authentication_error(open_front: OpenFront, journal: Journal) -> None:
    tokens = StaticTokenVerifier({"s3cret-token-for-tests": "ci@example.com"})
    secured = await open_front(auth=BearerAuth(tokens))
    async with secured.listening() as url:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            with anyio.fail_after(WAIT), pytest.raises(AuthenticationError) as raised:
                async with connect(url, journal, headers=headers):
                    pass
            assert raised.value.status == 401
        async with connect(url, journal, headers={"Authorization": "Bearer s3cret-token-for-tests"}) as client:
            with anyio.fail_after(WAIT):
                assert (await client.call_tool("double", {"x": 4})).structured_content == {"value": 8}


async def test_unreachable_server_is_one_clear_error(journal: Journal) -> None:
    with anyio.fail_after(WAIT), pytest.raises(ServerUnreachableError):
        async with connect(f"http://127.0.0.1:{free_port()}/mcp", journal):
            pass


async def test_a_timeout_inside_the_client_is_reported_as_a_timeout(
    either_transport: Any, journal: Journal, gate: Path
) -> None:
    with anyio.fail_after(WAIT), pytest.raises(TimeoutError) as raised:
        async with connect(either_transport, journal) as client:
            with anyio.fail_after(1):
                await client.call_tool("gated", {"gate": str(gate)})
    assert not isinstance(raised.value, ServerUnreachableError), "the server answered; the caller's bound ran out"


async def test_an_os_error_of_the_callers_own_comes_out_of_the_client_unchanged(
    front_url: str, journal: Journal, tmp_path: Path
) -> None:
    with anyio.fail_after(WAIT), pytest.raises(FileNotFoundError):
        async with connect(front_url, journal) as client:
            assert (await client.call_tool("double", {"x": 1})).structured_content == {"value": 2}
            (tmp_path / "never-written").read_text()


async def test_a_timeout_among_the_session_errors_is_not_an_unreachable_server() -> None:
    label = "http://127.0.0.1:9/mcp"
    bound = TimeoutError()
    assert translate_session_error(BaseExceptionGroup("session", [bound]), label=label, unauthorized=None) is bound
    refused = ConnectionRefusedError()
    translated = translate_session_error(BaseExceptionGroup("session", [refused]), label=label, unauthorized=None)
    assert isinstance(translated, ServerUnreachableError)
    # After a 401 the caller's own timeout is still theirs; the SDK's generic error is the refused token.
    session = BaseExceptionGroup("session", [bound])
    assert translate_session_error(session, label=label, unauthorized=401, raised_inside=bound) is bound
    generic = MCPError(code=-32603, message="Internal error")
    session = BaseExceptionGroup("session", [generic])
    translated = translate_session_error(session, label=label, unauthorized=401, raised_inside=generic)
    assert isinstance(translated, AuthenticationError) and translated.status == 401


# -- the journal and resuming ----------------------------------------------------------------


def test_journal_keeps_outstanding_tasks_and_forgets_terminal_and_expired(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    fresh = "2999-01-01T00:00:00Z"
    journal.record("http://a/mcp", "t1", tool="build", status="working", created_at=fresh, ttl_ms=60_000)
    journal.record("http://a/mcp", "t2", tool="test", status="input_required", created_at=fresh, ttl_ms=None)
    journal.record("http://a/mcp", "t3", tool="old", status="working", created_at="2020-01-01T00:00:00Z", ttl_ms=1)
    journal.record("http://b/mcp", "t4", tool="x", status="working", created_at=fresh, ttl_ms=None)
    assert [e.task_id for e in journal.entries("http://a/mcp")] == ["t1", "t2"], "t3 is past its TTL"
    journal.record("http://a/mcp", "t1", tool=None, status="completed", created_at=fresh, ttl_ms=60_000)
    assert [e.task_id for e in journal.entries()] == ["t2", "t4"]
    found = journal.find("t2")
    assert found is not None and found.tool == "test" and found.status == "input_required"
    assert Journal(tmp_path / "j.sqlite3").find("t4") is not None, "durable across opens"
    assert server_label("http://user:secret@host:1/mcp") == "http://host:1/mcp", "no credentials on disk"


async def test_a_killed_client_resumes_from_its_journal(either_transport: Any, tmp_path: Path, gate: Path) -> None:
    # The client is a child process, killed mid-wait; over HTTP it talks to the front in this process.
    child_journal = tmp_path / "child-journal.sqlite3"
    if isinstance(either_transport, str):
        spec = either_transport
    else:
        spec = server_label([either_transport.command, *either_transport.args])
    child = [sys.executable, "-m", "tests.client_child"]
    arguments = json.dumps({"gate": str(gate)})
    command = [*child, "call", spec, str(child_journal), "gated", arguments]
    caller = Process("client", command, tmp_path / "client.log").start()
    try:
        await until(lambda: (gate / "started").exists() and child_journal.exists(), "the child's task to start")
        journal = Journal(child_journal)
        await until(lambda: len(journal.entries()) == 1, "the task ID in the journal")
        caller.kill()
        [entry] = journal.entries()
        assert entry.tool == "gated" and entry.server == spec
    finally:
        caller.kill()
    (gate / "release").write_text("1")
    output = tmp_path / "resumed.out"
    command = [*child, "resume", spec, str(child_journal)]
    resumer = Process("resume", command, tmp_path / "resume.log", output_path=output)
    try:
        assert await resumer.start().exited(WAIT) == 0, resumer.log()
    finally:
        resumer.kill()
    [line] = output.read_text().splitlines()
    assert json.loads(line) == {"taskId": entry.task_id, "tool": "gated", "text": f"released {gate.name}"}
    assert (gate / "runs").read_text() == "1", "resuming waited for the task; it never re-ran it"
    assert journal.entries() == []
