"""`TasksClient`: an `mcp.Client` that waits for tasks, by push or polling, and never loses their IDs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ElicitationFnT, IncomingMessage, ListRootsFnT, MessageHandlerFnT, SamplingFnT
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_tasks_temporal.client._errors import AuthenticationError, ServerUnreachableError
from mcp_tasks_temporal.client._extension import Detached, TasksClientExtension, call_options, reset_call_options
from mcp_tasks_temporal.client._handle import OnChange, TaskHandle, WaitOptions
from mcp_tasks_temporal.client._journal import Journal, server_label
from mcp_tasks_temporal.client._models import EXTENSION_ID
from mcp_tasks_temporal.client._push import PushHub

ToolCall = types.CallToolResult | TaskHandle
"""What `TasksClient.start_tool` returns: the result when the server answered at once, else the task."""


class _StatusRecorder:
    """Notes HTTP 401s: the SDK turns them into a generic -32603, which would hide a bad token."""

    def __init__(self) -> None:
        self.unauthorized: int | None = None

    async def __call__(self, response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            self.unauthorized = response.status_code


class TasksClient:
    """An MCP client for servers that run tool calls as SEP-2663 tasks.

    `call_tool` returns the final `CallToolResult` whether the server answered
    at once or with a task; `start_tool` returns a `TaskHandle` for a task
    instead, for callers with other work to do meanwhile. Each task ID is
    written to the journal as soon as it arrives, so `pending()` finds the
    tasks a crashed or restarted client was waiting for.

    Input requests of a task (elicitation, sampling, roots) go to the
    callbacks given here, with the SDK's callback signatures; only the kinds
    with a callback are declared to the server, which must not ask for others.
    The context's `request_id` is the input request's key.

    Example:
        ```python
        async with TasksClient("http://127.0.0.1:8000/mcp") as client:
            result = await client.call_tool("build", {"ref": "main"})
            handle = await client.start_tool("build", {"ref": "dev"})
            if isinstance(handle, TaskHandle):
                async for task in handle:
                    print(task.status, task.status_message)
        ```

    Args:
        server: A Streamable HTTP URL, or the `StdioServerParameters` of a server to start.
        journal: A `Journal`, a path to one, `"default"` (`default_journal_path()`,
            `~/.local/state/mcp-tasks-temporal/journal.sqlite3`), or `None` for no journal.
        push: Follow tasks over `subscriptions/listen` when the server accepts it (else, or when
            `False`, poll).
        headers: Extra HTTP headers (for example `Authorization`); HTTP only.
        http_client: An `httpx2.AsyncClient` to send through; HTTP only.
        options: Poll and push settings.
    """

    def __init__(
        self,
        server: str | StdioServerParameters,
        *,
        journal: Journal | str | os.PathLike[str] | Literal["default"] | None = "default",
        push: bool = True,
        elicitation_callback: ElicitationFnT | None = None,
        sampling_callback: SamplingFnT | None = None,
        list_roots_callback: ListRootsFnT | None = None,
        message_handler: MessageHandlerFnT | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        client_info: types.Implementation | None = None,
        read_timeout_seconds: float | None = None,
        options: WaitOptions | None = None,
    ) -> None:
        self.server = server
        self.label = server_label(server) if isinstance(server, str) else server_label([server.command, *server.args])
        """How the journal names this server."""
        if journal == "default":
            self.journal: Journal | None = Journal()
        elif journal is None or isinstance(journal, Journal):
            self.journal = journal
        else:
            self.journal = Journal(Path(journal))
        self.push = push
        self.extension = TasksClientExtension(journal=self.journal, server=self.label, options=options)
        self._callbacks: dict[str, Any] = {
            "elicitation_callback": elicitation_callback,
            "sampling_callback": sampling_callback,
            "list_roots_callback": list_roots_callback,
            "client_info": client_info or types.Implementation(name="mcp-tasks-temporal", version="0.1.0"),
            "read_timeout_seconds": read_timeout_seconds,
        }
        self._user_message_handler = message_handler
        self._headers = dict(headers or {})
        self._http_client = http_client
        self._recorder = _StatusRecorder()
        self._client: Client | None = None
        self._stack: AsyncExitStack | None = None

    # -- lifecycle ----------------------------------------------------------------------

    async def __aenter__(self) -> TasksClient:
        stack = AsyncExitStack()
        try:
            transport: Any = self.server if isinstance(self.server, StdioServerParameters) else await self._http(stack)
            client = Client(
                transport,
                mode="auto",
                extensions=[self.extension],
                message_handler=self._on_message,
                **self._callbacks,
            )
            await stack.enter_async_context(client)
            group = await stack.enter_async_context(anyio.create_task_group())
            # Listens run in this group; it must stop before the session closes under them.
            stack.callback(group.cancel_scope.cancel)
            if self.push and self._offers_tasks(client):
                self.extension.hub = PushHub(group)
        except BaseException as error:
            await stack.aclose()
            raise self._translate(error) from error
        self._client = client
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        stack, self._stack, self._client = self._stack, None, None
        self.extension.hub = None
        try:
            if stack is not None:
                await stack.__aexit__(exc_type, exc, traceback)
        except BaseException as error:
            translated = self._translate(error, raised_inside=exc)
            if translated is error:
                raise
            raise translated from error

    async def _http(self, stack: AsyncExitStack) -> Any:
        assert isinstance(self.server, str)
        http = self._http_client
        if http is None:
            http = httpx2.AsyncClient(headers=self._headers, timeout=httpx2.Timeout(30.0, read=300.0))
            await stack.enter_async_context(http)
        elif self._headers:
            http.headers.update(self._headers)
        hooks = dict(http.event_hooks)
        hooks["response"] = [*hooks.get("response", []), self._recorder]
        http.event_hooks = hooks
        return streamable_http_client(self.server, http_client=http)

    def _translate(self, error: BaseException, *, raised_inside: BaseException | None = None) -> BaseException:
        return translate_session_error(
            error, label=self.label, unauthorized=self._recorder.unauthorized, raised_inside=raised_inside
        )

    @staticmethod
    def _offers_tasks(client: Client) -> bool:
        extensions = client.server_capabilities.extensions or {}
        return client.protocol_version in MODERN_PROTOCOL_VERSIONS and EXTENSION_ID in extensions

    async def _on_message(self, message: IncomingMessage) -> None:
        hub = self.extension.hub
        if hub is not None:
            await hub.on_message(message)
        if self._user_message_handler is not None:
            await self._user_message_handler(message)

    # -- the API ------------------------------------------------------------------------------

    @property
    def mcp(self) -> Client:
        """The underlying SDK client (for tools/list, resources, ...)."""
        if self._client is None:
            raise RuntimeError("TasksClient must be used within `async with`")
        return self._client

    @property
    def offers_tasks(self) -> bool:
        """Whether the server advertised the tasks extension."""
        return self._offers_tasks(self.mcp)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, on_change: OnChange | None = None
    ) -> types.CallToolResult:
        """Call a tool and return its final result, waiting for the task if the server made one.

        A tool error is a result with `is_error`, as for a synchronous call.

        Raises:
            TaskFailedError: The task failed (an `MCPError` with the task's JSON-RPC error).
            TaskCancelledError: The task was cancelled.
            MCPError: The server refused the call.
        """
        token = call_options(on_change=on_change)
        try:
            return await self.mcp.call_tool(name, dict(arguments) if arguments is not None else None)
        except MCPError as error:
            raise self._auth_or(error) from None
        finally:
            reset_call_options(token)

    async def start_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCall:
        """Call a tool; return its result if the server answered at once, else the task's handle.

        Input requests the server makes before creating the task (MRTR rounds)
        are answered here, through the same callbacks.
        """
        token = call_options(detach=True)
        try:
            return await self.mcp.call_tool(name, dict(arguments) if arguments is not None else None)
        except Detached as detached:
            return detached.handle
        except MCPError as error:
            raise self._auth_or(error) from None
        finally:
            reset_call_options(token)

    def task(self, task_id: str, *, tool: str | None = None) -> TaskHandle:
        """A handle on a task this client was given earlier (by ID)."""
        if tool is None and self.journal is not None:
            entry = self.journal.find(task_id)
            tool = entry.tool if entry is not None else None
        return self.extension.handle(self.mcp.session, task_id, tool=tool)

    def pending(self) -> list[TaskHandle]:
        """Handles on every task of this server the journal still holds: what a restarted client resumes."""
        if self.journal is None:
            return []
        return [
            self.extension.handle(self.mcp.session, entry.task_id, tool=entry.tool)
            for entry in self.journal.entries(self.label)
        ]

    def _auth_or(self, error: MCPError) -> Exception:
        if self._recorder.unauthorized is not None:
            return AuthenticationError(self.label, self._recorder.unauthorized)
        return error


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        group: BaseExceptionGroup[BaseException] = error  # pyright: ignore[reportUnknownVariableType]
        return [leaf for inner in group.exceptions for leaf in _leaves(inner)]
    return [error]


def translate_session_error(
    error: BaseException, *, label: str, unauthorized: int | None, raised_inside: BaseException | None = None
) -> BaseException:
    """The one error that explains a failed connection, instead of a generic code or a task-group bundle.

    `raised_inside` is what the caller's own `async with` block raised: when
    that is all the session's task groups carry back, it is the caller's error
    and comes out unchanged (a timeout stays a timeout). Only an `MCPError`
    from the block may still be explained by a refused token.
    """
    leaves = _leaves(error)
    meaningful = [leaf for leaf in leaves if not isinstance(leaf, anyio.get_cancelled_exc_class())]
    callers_own = len(meaningful) == 1 and meaningful[0] is raised_inside
    if callers_own and raised_inside is not None and not isinstance(raised_inside, MCPError):
        return raised_inside
    if unauthorized is not None and isinstance(error, MCPError | BaseExceptionGroup):
        return AuthenticationError(label, unauthorized)
    for leaf in leaves:
        # TimeoutError is an OSError, but a bound that ran out says nothing about reaching the server.
        if isinstance(leaf, httpx2.TransportError | OSError) and not isinstance(leaf, TimeoutError):
            return ServerUnreachableError(label, leaf)
    if len(meaningful) == 1 and isinstance(meaningful[0], Exception):
        return meaningful[0]  # unwrapped from the task groups it crossed
    return error
