"""The client commands' arguments, help and exit statuses: what the command line needs before one runs.

Kept apart from `_cli`, which imports the MCP client, so `--help` starts fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from mcp_tasks_temporal.client._exits import TOKEN_ENV
from mcp_tasks_temporal.client._journal import default_journal_path
from mcp_tasks_temporal.ops.settings import environment, variable

EXIT_STATUSES = """exit status:
  0   done (for call/watch: the task completed)
  1   the tool reported an error (its result has isError: true)
  2   usage: bad arguments, an unknown task ID (pass --url), a key not open or a bad answer, a cancel of an ended task
  3   a JSON-RPC error: unknown or expired task, the task failed (-32603, ...), a request the server refused
  4   the task was cancelled
  5   authentication failed (HTTP 401/403): check --token or $MCP_TASKS_TOKEN
  6   the server is unreachable
  70  an unexpected error in this client (--log-level debug shows the traceback)
  130 interrupted (Ctrl-C); the task keeps running and `watch ID` resumes it"""

_ROOT_HELP = "offer this folder to the tool as a root (repeat)"

Command = Callable[[argparse.Namespace], Awaitable[None]]


def _lazy(name: str) -> Command:
    """The command `name` of `_cli`, imported only when it runs: `--help` needs none of the MCP client."""

    async def run(args: argparse.Namespace) -> None:
        from mcp_tasks_temporal.client import _cli

        await _cli.guarded(getattr(_cli, name))(args)

    return run


class _Subparsers(Protocol):
    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def add_commands(commands: _Subparsers) -> None:
    """Add the client commands to the `mcp-tasks-temporal` subparsers."""
    connection = argparse.ArgumentParser(add_help=False)
    where = connection.add_argument_group("server")
    where.add_argument("--url", help="Streamable HTTP endpoint (for a task ID: default from the journal)")
    where.add_argument("--stdio", metavar="COMMAND", help="start this stdio server instead (one shell-quoted string)")
    where.add_argument("--header", action="append", default=[], metavar="NAME:VALUE", help="extra HTTP header (repeat)")
    where.add_argument(
        "--token",
        default=variable(TOKEN_ENV),
        help=f"bearer token for the server (default ${TOKEN_ENV}); never written to the journal",
    )
    where.add_argument("--no-push", action="store_true", help="poll tasks/get even if the server pushes")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    common.add_argument(
        "--journal", type=Path, default=None, help=f"task journal (default: {default_journal_path(environment())})"
    )

    def command(name: str, parents: list[argparse.ArgumentParser], help: str) -> argparse.ArgumentParser:
        parser = commands.add_parser(
            name, parents=parents, help=help, epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.set_defaults(client_command=True)
        return parser

    call = command("call", [connection, common], "call a tool; wait for its task")
    call.add_argument("tool")
    call.add_argument("--args", default="{}", metavar="JSON", help="tool arguments as a JSON object")
    call.add_argument("--detach", action="store_true", help="print the task ID and return at once")
    call.add_argument("--root", action="append", default=[], metavar="PATH", help=_ROOT_HELP)
    call.set_defaults(run=_lazy("run_call"))

    get = command("get", [connection, common], "show a task")
    get.add_argument("task_id", metavar="ID")
    get.set_defaults(run=_lazy("run_get"))

    cancel = command("cancel", [connection, common], "ask the server to cancel a task")
    cancel.add_argument("task_id", metavar="ID")
    cancel.set_defaults(run=_lazy("run_cancel"))

    answer = command("answer", [connection, common], "answer a task's input request")
    answer.add_argument("task_id", metavar="ID")
    answer.add_argument("key", help="the key of an open input request, as `get` shows it")
    answer.add_argument(
        "response",
        metavar="VALUE|JSON",
        help="the answer: a plain value when the question has one field (yes, 42, some text; !decline, !cancel), "
        'else JSON, e.g. \'{"action": "accept", "content": {...}}\'',
    )
    answer.set_defaults(run=_lazy("run_answer"))

    watch = command("watch", [connection, common], "follow a task until it ends")
    watch.add_argument("task_id", metavar="ID")
    watch.add_argument("--no-input", action="store_true", help="do not prompt for the task's input requests")
    watch.add_argument("--root", action="append", default=[], metavar="PATH", help=_ROOT_HELP)
    watch.set_defaults(run=_lazy("run_watch"))

    tasks = command("tasks", [common], "the tasks the local journal is waiting for")
    tasks.add_argument("--all", action="store_true", help="also the finished tasks the journal still remembers")
    tasks.set_defaults(run=_lazy("run_tasks"))
