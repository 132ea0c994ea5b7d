"""The operator commands' arguments and help (`audit`, `admin`), importable without Temporal: `--help` stays fast.

What they run is in `operator_cli`, imported when one runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mcp_tasks_temporal.ops.cli_options import add_codec_options, add_connection_options
from mcp_tasks_temporal.ops.payload_options import add_storage_options
from mcp_tasks_temporal.ops.settings import variable
from mcp_tasks_temporal.temporal.contract import TASK_STATUSES

UI_ENV = "TEMPORAL_UI_ADDRESS"


class _Subparsers(Protocol):
    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def add_temporal_options(parser: argparse.ArgumentParser) -> None:
    """The Temporal connection, payload codec and payload storage options, as `serve` and `worker` take them."""
    add_connection_options(parser)
    add_codec_options(parser)
    add_storage_options(parser)
    parser.add_argument(
        "--temporal-ui",
        default=variable(UI_ENV),
        metavar="URL",
        help=f"Temporal Web UI address, for links to the task (default ${UI_ENV})",
    )


def _lazy(name: str, module: str = "operator_cli") -> Callable[[argparse.Namespace], Awaitable[None]]:
    async def run(args: argparse.Namespace) -> None:
        from importlib import import_module

        from mcp_tasks_temporal.ops import operator_cli

        command = getattr(import_module(f"mcp_tasks_temporal.ops.{module}"), name)
        await operator_cli.exit_status(command)(args)

    return run


def add_operator_commands(commands: _Subparsers) -> None:
    audit = commands.add_parser("audit", help="a task's whole story from its Temporal history (operators)")
    audit.add_argument("task", metavar="TASK_ID", help="a task ID, or the task's workflow ID")
    audit.add_argument("--principal", metavar="NAME", help="the principal that created the task")
    _add_jwt_issuer(audit)
    audit.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    audit.add_argument(
        "--verify", action="store_true", help="replay the history against the workflow code installed here"
    )
    audit.add_argument(
        "--app",
        default=variable("MCP_TASKS_APP"),
        metavar="MODULE:ATTR",
        help="the app whose workflow tools --verify should include",
    )
    add_temporal_options(audit)
    audit.set_defaults(run=_lazy("run_audit"), one_shot_temporal=True)

    admin = commands.add_parser("admin", help="list or cancel tasks from Temporal visibility (operators)")
    admin.set_defaults(one_shot_temporal=True)
    actions = admin.add_subparsers(dest="action", required=True)
    filters = argparse.ArgumentParser(add_help=False)
    add_temporal_options(filters)
    filters.add_argument("--owner", metavar="PRINCIPAL", help="tasks created by this principal")
    _add_jwt_issuer(filters)
    filters.add_argument("--tool", metavar="NAME", help="tasks of this tool")
    filters.add_argument("--status", choices=TASK_STATUSES, help="tasks in this status")
    filters.add_argument("--older-than", type=_duration, metavar="DURATION", help="created longer ago than, e.g. 7d")
    filters.add_argument("--json", action="store_true", help="one JSON document on stdout")
    tasks = actions.add_parser("tasks", parents=[filters], help="list the matching tasks")
    tasks.set_defaults(run=_lazy("run_admin_tasks"))
    cancel = actions.add_parser("cancel", parents=[filters], help="cancel the matching running tasks")
    cancel.add_argument("--yes", action="store_true", help="do not ask before cancelling")
    cancel.set_defaults(run=_lazy("run_admin_cancel"))
    _add_deployment_actions(actions)


def _add_jwt_issuer(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jwt-issuer",
        default=variable("MCP_TASKS_JWT_ISSUER"),
        metavar="URL",
        help="the front servers' JWT issuer, so a principal is named by its claim as they name it "
        "($MCP_TASKS_JWT_ISSUER)",
    )


def _add_deployment_actions(actions: _Subparsers) -> None:
    connection = argparse.ArgumentParser(add_help=False)
    add_temporal_options(connection)
    connection.add_argument(
        "--deployment-name",
        default=variable("MCP_TASKS_DEPLOYMENT_NAME"),
        required=not variable("MCP_TASKS_DEPLOYMENT_NAME"),
        metavar="NAME",
        help="the worker deployment ($MCP_TASKS_DEPLOYMENT_NAME)",
    )
    deployment = actions.add_parser(
        "deployment", parents=[connection], help="a worker deployment's builds: current, draining, drained"
    )
    deployment.add_argument("--json", action="store_true", help="one JSON document on stdout")
    deployment.set_defaults(run=_lazy("run_deployment", "deployment_admin"))
    current = actions.add_parser(
        "set-current",
        parents=[connection],
        help="send new tasks to this build (after `audit --verify`); pinned tasks stay on theirs",
    )
    current.add_argument("--build-id", required=True, metavar="ID", help="the build to make current")
    current.add_argument(
        "--wait", type=float, default=10.0, metavar="SECONDS", help="how long to wait for the build's workers to poll"
    )
    current.set_defaults(run=_lazy("run_set_current", "deployment_admin"))


def _duration(text: str) -> Any:
    from mcp_tasks_temporal.ops.admin import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
