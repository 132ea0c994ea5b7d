"""What the client commands run (`client_cli` declares them): `call`, `get`, `cancel`, `answer`, `watch`, `tasks`.

Each takes its `ClientArgs` and drives `mcp_tasks_temporal.client.TasksClient`; questions are asked
on the terminal (`terminal`). Errors become one line and an exit status (`guarded`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, cast

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext, ListRootsFnT
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal.client import (
    TERMINAL_STATUSES,
    AuthenticationError,
    DetailedTask,
    Journal,
    JournalEntry,
    ServerUnreachableError,
    TaskCancelledError,
    TaskFailedError,
    TaskHandle,
    TasksClient,
)
from mcp_tasks_temporal.ops.client_args import (
    EXIT_AUTH,
    EXIT_CANCELLED,
    EXIT_INPUT_REQUIRED,
    EXIT_PROTOCOL,
    EXIT_TOOL_ERROR,
    EXIT_UNEXPECTED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    ClientArgs,
)
from mcp_tasks_temporal.ops.settings import environment
from mcp_tasks_temporal.ops.terminal import (
    CANCEL,
    DECLINE,
    NoTerminal,
    StatusLine,
    TerminalPrompter,
    answer_command,
    as_object,
    convert,
    describe_task,
    format_age,
    render_result,
)

_PROG = "mcp-tasks-temporal"
logger = logging.getLogger(__name__)

Command = Callable[[ClientArgs], Awaitable[None]]


# -- commands ------------------------------------------------------------------------------


async def run_call(args: ClientArgs) -> None:
    arguments = _json_arg(args.args, "--args")
    if not isinstance(arguments, dict):
        raise ValueError("--args must be a JSON object")
    status = StatusLine(quiet=args.json and not sys.stderr.isatty())
    # Reports happen after the client has closed: an exit raised inside its task groups would
    # reach the user as a traceback of the whole bundle.
    async with _client(args, _server_from_flags(args), status) as client:
        call = await client.start_tool(args.tool, arguments)  # pyright: ignore[reportUnknownArgumentType]
        task = None
        if not isinstance(call, types.CallToolResult) and not args.detach:
            task = await _follow(call, status, answer_inputs=not args.no_input)
    if isinstance(call, types.CallToolResult):
        _report_result(args, None, call.model_dump(by_alias=True, mode="json", exclude_none=True))
    elif task is not None:
        _report_task(args, task)
    else:
        _print_task_id(args, call)


async def run_watch(args: ClientArgs) -> None:
    status = StatusLine(quiet=args.json and not sys.stderr.isatty())
    async with _client(args, _server_for(args), status) as client:
        handle = client.task(args.task_id)
        link = (await handle.get()).web_ui
        if link:
            print(f"{_PROG}: task {args.task_id} in the Temporal Web UI: {link}", file=sys.stderr, flush=True)
        task = await _follow(handle, status, answer_inputs=not args.no_input)
    _report_task(args, task)


async def run_get(args: ClientArgs) -> None:
    async with _client(args, _server_for(args)) as client:
        handle = client.task(args.task_id)
        task = await handle.get()
    if args.json:
        _print_json(task.wire())
        return
    describe_task(task, handle.tool)


async def run_cancel(args: ClientArgs) -> None:
    async with _client(args, _server_for(args)) as client:
        handle = client.task(args.task_id)
        # The server acks a cancel of an ended task, as the spec asks; the person asking wants to know.
        task = await handle.get()
        ended = task.status if task.terminal else None
        if ended is None:
            await handle.cancel()
            task = await handle.get()  # what the journal, and so `tasks`, shows from now on
    if ended is not None:
        _fail(args, EXIT_USAGE, f"task {args.task_id} already ended ({ended}); there is nothing to cancel")
    if args.json:
        _print_json({"taskId": args.task_id, "cancelRequested": True, "status": task.status})
    else:
        print(f"cancellation requested for {args.task_id} (now {task.status})")


async def run_answer(args: ClientArgs) -> None:
    async with _client(args, _server_for(args)) as client:
        handle = client.task(args.task_id)
        # The server acks answers to keys that are not open and drops them, as the spec asks; a
        # person who typed a key wants to hear that nothing was delivered.
        task = await handle.get()
        open_keys = sorted(task.input_requests or {})
        if args.key in open_keys:
            response = answer_response(args.response, (task.input_requests or {})[args.key])
            try:
                await handle.update({args.key: response})
            except MCPError as error:
                if error.code != types.INVALID_PARAMS or not isinstance(error.data, dict):
                    raise
                # The server named the key: the answer does not fit its question, a usage error like a key not open.
                _fail(args, EXIT_USAGE, f"error {error.code}: {error.message}", code=error.code)
            await handle.get()  # the journal, and so `tasks`, shows the task as the answer left it
    if args.key not in open_keys:
        if open_keys:
            problem = f"has no open question {args.key!r}; open: {', '.join(open_keys)}"
        else:
            problem = f"has no open questions (it is {task.status})"
        _fail(args, EXIT_USAGE, f"task {args.task_id} {problem}")
    if args.json:
        _print_json({"taskId": args.task_id, "key": args.key, "answered": True})
    else:
        print(f"answered {args.key} of {args.task_id}")


async def run_tasks(args: ClientArgs) -> None:
    journal = Journal(args.settings.journal_path())
    try:
        unreached = await _refresh(journal, journal.entries(finished=args.all), args.settings.bearer_token())
        entries = journal.entries(finished=args.all)
        finished = 0 if args.all or entries else len(journal.entries(finished=True))
    finally:
        journal.close()

    def stale(entry: JournalEntry) -> bool:
        """Its server did not answer: the status is what the journal last saw, not what the task is."""
        return entry.server in unreached and entry.status not in TERMINAL_STATUSES

    if args.json:
        _print_json(
            [
                {
                    "taskId": e.task_id,
                    "tool": e.tool,
                    "server": e.server,
                    "status": e.status,
                    "statusMessage": e.status_message,
                    "createdAt": e.created_at,
                    "ttlMs": e.ttl_ms,
                    "ageSeconds": round(e.age_s, 1),
                    "stale": stale(e),
                }
                for e in entries
            ]
        )
        return
    if not entries:
        if finished:
            print(f"no unfinished tasks in the journal ({finished} finished: tasks --all)", file=sys.stderr)
        else:
            print("no tasks in the journal", file=sys.stderr)
        return
    rows = [("ID", "TOOL", "SERVER", "STATUS", "AGE")]
    rows += [
        (e.task_id, e.tool or "?", e.server, f"{e.status} (last seen, server unreachable)" if stale(e) else e.status,
         format_age(e.age_s))
        for e in entries
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[4])


_REFRESH_S = 10.0
"""How long `tasks` waits for its servers before it shows what the journal last saw."""


async def _refresh(journal: Journal, entries: list[JournalEntry], token: str | None) -> set[str]:
    """Read each unfinished task's status from its HTTP server into the journal, all servers at once.

    The journal holds what this client last saw; an answer or a cancel from elsewhere (another
    client, an operator) moves a task on without it. A stdio server is not started just to list;
    an unreachable server or one that wants a token leaves its tasks as the journal saw them.
    Returns the servers that could not be read (their tasks' statuses are the journal's last word).
    """
    unreached: set[str] = set()
    by_server: dict[str, list[str]] = {}
    for entry in entries:
        if entry.status not in TERMINAL_STATUSES and not entry.server.startswith("stdio:"):
            by_server.setdefault(entry.server, []).append(entry.task_id)
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def refresh(server: str, task_ids: list[str]) -> None:
        unreached.add(server)
        with anyio.move_on_after(_REFRESH_S):
            try:
                async with TasksClient(server, journal=journal, push=False, headers=headers) as client:
                    for task_id in task_ids:
                        with contextlib.suppress(MCPError):  # expired or unknown: the journal forgets it
                            await client.task(task_id).get()
                unreached.discard(server)
            except Exception:  # unreachable, or a token it wants: the journal's word stands
                logger.debug("cannot refresh the tasks of %s", server, exc_info=True)

    async with anyio.create_task_group() as group:
        for server, task_ids in by_server.items():
            group.start_soon(refresh, server, task_ids)
    return unreached


def answer_response(text: str, request: Any) -> dict[str, Any]:
    """The `tasks/update` answer a person typed: JSON, or plain words where the question makes them unambiguous.

    `yes` answers a question with a single boolean field, `42` one with a single number, any text one with a
    single string field; `!decline` and `!cancel` refuse, as at the prompt.
    """
    stripped = text.strip()
    if stripped in (DECLINE, CANCEL):
        return {"action": stripped.removeprefix("!")}
    try:
        parsed = json.loads(stripped)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return cast("dict[str, Any]", parsed)
    schema = as_object(as_object(as_object(request).get("params")).get("requestedSchema"))
    fields = as_object(schema.get("properties"))
    if len(fields) != 1:
        example = '{"action": "accept", "content": {...}}'
        kind = f"{len(fields)} fields" if fields else "no form"
        raise ValueError(f"this question has {kind}: answer with a JSON object, e.g. '{example}'")
    [(name, field)] = fields.items()
    try:
        value = convert(text, as_object(field))
    except ValueError as problem:
        raise ValueError(f"{problem} (the answer to {name!r}), or give the whole answer as JSON") from None
    return {"action": "accept", "content": {name: value}}


# -- following a task ----------------------------------------------------------------------


async def _follow(handle: TaskHandle, status: StatusLine, *, answer_inputs: bool = True) -> DetailedTask:
    """Follow the task to its end on the status line; its questions asked here, or (`--no-input`) pointed at."""
    task: DetailedTask | None = None
    pointed: set[str] = set()

    def on_change(change: DetailedTask) -> None:
        status.show(change)
        if answer_inputs:
            return
        for key in sorted(set(change.input_requests or {}) - pointed):
            pointed.add(key)
            status.clear()
            print(
                f"{_PROG}: task {handle.task_id} asks {key!r}: {answer_command(handle.task_id, key)}", file=sys.stderr
            )

    async with anyio.create_task_group() as group:
        group.start_soon(status.tick)
        try:
            task = await handle.wait(answer_inputs=answer_inputs, on_change=on_change)
        except anyio.get_cancelled_exc_class():
            # Ctrl-C stops the waiting, not the task: say how to pick it up again.
            status.clear()
            print(
                f"{_PROG}: still running as task {handle.task_id}; `{_PROG} watch {handle.task_id}` resumes",
                file=sys.stderr,
            )
            raise
        finally:
            status.clear()
            group.cancel_scope.cancel()
    assert task is not None  # wait() returned, or its error propagated
    return task


def _report_task(args: ClientArgs, task: DetailedTask) -> None:
    """Print a terminal task; a failed or cancelled one ends the command with its exit code."""
    if task.status == "completed":
        _report_result(args, task.task_id, task.result or {})
        return
    if args.json:
        _print_json(task.wire())
    if task.status == "cancelled":
        raise TaskCancelledError(task)
    raise TaskFailedError(task)


def _report_result(args: ClientArgs, task_id: str | None, result: dict[str, Any]) -> None:
    if args.json:
        _print_json({"taskId": task_id, "status": "completed", "result": result})
    else:
        render_result(result)
    if result.get("isError"):
        print(f"{_PROG}: the tool reported an error", file=sys.stderr)
        raise SystemExit(EXIT_TOOL_ERROR)


def _print_task_id(args: ClientArgs, handle: TaskHandle) -> None:
    if args.json:
        _print_json(handle.last.wire() if handle.last is not None else {"taskId": handle.task_id})
    else:
        print(handle.task_id)


# -- connecting ------------------------------------------------------------------------------

_Server = str | StdioServerParameters


def _server_from_flags(args: ClientArgs) -> _Server:
    if args.url and args.stdio:
        raise ValueError("give --url or --stdio, not both")
    if args.stdio:
        return _stdio(shlex.split(args.stdio))
    if args.url:
        return str(args.url)
    raise ValueError("give the server with --url URL (or --stdio COMMAND)")


def _server_for(args: ClientArgs) -> _Server:
    """`--url`/`--stdio` if given, else the server the journal recorded for this task ID."""
    if args.url or args.stdio:
        return _server_from_flags(args)
    journal = Journal(args.settings.journal_path())
    entry = journal.find(args.task_id)
    journal.close()
    if entry is None:
        _fail(
            args,
            EXIT_USAGE,
            f"task {args.task_id} is not in the journal {journal.path} (expired, or never recorded here); pass --url",
        )
    if entry.server.startswith("stdio:"):
        return _stdio(shlex.split(entry.server.removeprefix("stdio:")))
    return entry.server


def _stdio(command: list[str]) -> StdioServerParameters:
    if not command:
        raise ValueError("--stdio needs a command")
    # The SDK passes a server only a minimal environment; a CLI user expects theirs.
    return StdioServerParameters(command=command[0], args=command[1:], env=dict(environment()), cwd=os.getcwd())


def _client(args: ClientArgs, server: _Server, status: StatusLine | None = None) -> TasksClient:
    headers: dict[str, str] = {}
    for header in args.header:
        name, sep, value = str(header).partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--header takes NAME:VALUE, not {header!r}")
        headers[name.strip()] = value.strip()
    token = args.settings.bearer_token()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    roots = [Path(p).resolve() for p in args.root]
    return TasksClient(
        server,
        journal=Journal(args.settings.journal_path()),
        push=not args.no_push,
        headers=headers,
        # Declared even for --detach and --no-input: `watch` or `answer` can still answer later.
        elicitation_callback=TerminalPrompter(status, ask=not args.no_input),
        list_roots_callback=_roots_callback(roots) if roots else None,
    )


def _roots_callback(roots: list[Path]) -> ListRootsFnT:
    async def list_roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        return types.ListRootsResult(roots=[types.Root(uri=root.as_uri(), name=root.name) for root in roots])  # pyright: ignore[reportArgumentType]

    return list_roots


# -- output and errors ----------------------------------------------------------------------


def guarded(command: Command) -> Command:
    """Turn what a command can run into a one-line error and an exit code."""

    async def run(args: ClientArgs) -> None:
        try:
            try:
                await command(args)
            except BaseExceptionGroup as group:
                raise _single_cause(group) from None
        except BrokenPipeError:
            raise  # stdout's reader is gone (`| head`): nothing to report, and nowhere to report it
        except NoTerminal as unasked:
            _fail(args, EXIT_INPUT_REQUIRED, str(unasked), task_id=unasked.task_id)
        except AuthenticationError as error:
            _fail(args, EXIT_AUTH, str(error), status=error.status)
        except ServerUnreachableError as error:
            _fail(args, EXIT_UNREACHABLE, str(error))
        except TaskCancelledError as error:
            _fail(args, EXIT_CANCELLED, str(error), quiet_json=True)
        except TaskFailedError as error:
            message = f"error {error.code}: task failed: {error.message}"
            _fail(args, EXIT_PROTOCOL, message, code=error.code, quiet_json=True)
        except MCPError as error:
            _fail(args, EXIT_PROTOCOL, f"error {error.code}: {error.message}", code=error.code)
        except (ValueError, OSError) as error:
            _fail(args, EXIT_USAGE, str(error))
        except Exception as error:
            logger.debug("unexpected error", exc_info=True)
            _fail(args, EXIT_UNEXPECTED, f"unexpected error: {type(error).__name__}: {error}")

    return run


def _single_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a task-group bundle stands for (cancellations of its siblings aside)."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        current = pending.pop()
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        elif not isinstance(current, anyio.get_cancelled_exc_class()):
            leaves.append(current)
    exits = [leaf for leaf in leaves if isinstance(leaf, SystemExit | KeyboardInterrupt)]
    if exits:
        return exits[0]
    return leaves[0] if len(leaves) == 1 else group


def _fail(
    args: ClientArgs,
    exit_code: int,
    message: str,
    *,
    code: int | None = None,
    status: int | None = None,
    task_id: str | None = None,
    quiet_json: bool = False,
) -> NoReturn:
    print(f"{_PROG}: {message}", file=sys.stderr, flush=True)
    if args.json and not quiet_json:
        error: dict[str, Any] = {"message": message}
        if task_id is not None:
            error["taskId"] = task_id
        if code is not None:
            error["code"] = code
        if status is not None:
            error["httpStatus"] = status
        _print_json({"error": error})
    raise SystemExit(exit_code)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False), flush=True)


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{what} is not valid JSON: {error}") from None
