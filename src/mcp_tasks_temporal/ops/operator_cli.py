"""`audit` and `admin` on the command line; what they run is `audit_command`, `admin_commands`, `deployment_admin`.

They talk to Temporal directly, never to an MCP server, so nothing here is
reachable over MCP; whoever runs them needs the namespace's credentials.

    mcp-tasks-temporal audit 6f1c... --principal alice --format markdown
    mcp-tasks-temporal audit 'mcp-task/<owner key>/6f1c...' --verify --format json
    mcp-tasks-temporal admin tasks --owner alice --status input_required --older-than 7d
    mcp-tasks-temporal admin cancel --tool build --older-than 2d --yes
    mcp-tasks-temporal admin cancel 6f1c... --owner alice
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import click

from mcp_tasks_temporal.ops.cli import invocation
from mcp_tasks_temporal.ops.operator_args import (
    ADMIN_EXIT_STATUSES,
    AUDIT_EXIT_STATUSES,
    AdminArgs,
    AuditArgs,
    DeploymentArgs,
)
from mcp_tasks_temporal.ops.settings.model import Settings
from mcp_tasks_temporal.ops.settings.options import SettingsCommand, given_flags, load_settings
from mcp_tasks_temporal.ops.settings.processes import AuditSettings, DeploymentSettings, OperatorSettings
from mcp_tasks_temporal.temporal.contract import TASK_STATUSES

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """`90s`, `15m`, `2h`, `7d`, `1w` or combinations like `1h30m`."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhdw])", text.strip().lower())
    if not parts or "".join(n + u for n, u in parts) != text.strip().lower():
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 15m, 2h, 7d, 1w, 1h30m)")
    return timedelta(seconds=sum(float(n) * _UNITS[u] for n, u in parts))


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> timedelta | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


def _operator_command(
    name: str,
    model: type[Settings],
    make_args: Callable[[Any, dict[str, Any]], Any],
    runner: Callable[[], Callable[[Any], Awaitable[int | None]]],
    description: str,
    params: list[click.Parameter],
    epilog: str,
) -> SettingsCommand:
    @click.pass_context
    def callback(ctx: click.Context, **values: Any) -> Any:
        settings = load_settings(model, ctx.command_path, given_flags(ctx, model))
        args = make_args(settings, {key: value for key, value in values.items() if key not in model.model_fields})

        async def job() -> int | None:
            return await runner()(args)

        return invocation(ctx, "operator", settings, job, one_shot=True)

    return SettingsCommand(
        name, callback=callback, params=params, settings_model=model, help=description, epilog=epilog
    )


def _audit_runner() -> Callable[[AuditArgs], Awaitable[int | None]]:
    from mcp_tasks_temporal.ops.audit_command import run_audit

    return run_audit


def _admin_runner(name: str) -> Callable[[], Callable[[Any], Awaitable[int | None]]]:
    def runner() -> Callable[[Any], Awaitable[int | None]]:
        from importlib import import_module

        module, _, attr = name.partition(":")
        return getattr(import_module(f"mcp_tasks_temporal.ops.{module}"), attr)

    return runner


audit = _operator_command(
    "audit",
    AuditSettings,
    lambda settings, values: AuditArgs(settings=settings, **values),
    _audit_runner,
    "A task's whole story from its Temporal history; TASK_ID is a task ID, or the task's workflow ID.",
    [
        click.Argument(["task"], metavar="TASK_ID"),
        click.Option(["--principal"], metavar="NAME", help="the principal that created the task"),
        click.Option(
            ["--format"],
            type=click.Choice(["text", "json", "markdown"]),
            default="text",
            help="json: exactly one JSON document on stdout, whatever the outcome (docs/audit.md)",
        ),
        click.Option(["--verify"], is_flag=True, help="replay the history against the workflow code installed here"),
    ],
    AUDIT_EXIT_STATUSES,
)

_FILTERS: list[click.Parameter] = [
    click.Option(["--owner"], metavar="PRINCIPAL", help="tasks created by this principal"),
    click.Option(["--tool"], metavar="NAME", help="tasks of this tool"),
    click.Option(["--status"], type=click.Choice(TASK_STATUSES), help="tasks in this status"),
    click.Option(
        ["--older-than"],
        metavar="DURATION",
        callback=_duration,
        help="created longer ago than, e.g. 90s, 15m, 2h, 7d, 1w, 1h30m",
    ),
    click.Option(["--json"], is_flag=True, help="one JSON document on stdout"),
]


def _admin_args(command: str) -> Callable[[Any, dict[str, Any]], AdminArgs]:
    return lambda settings, values: AdminArgs(settings=settings, command=command, **values)


def _deployment_args(command: str) -> Callable[[Any, dict[str, Any]], DeploymentArgs]:
    return lambda settings, values: DeploymentArgs(settings=settings, command=command, **values)


admin = click.Group("admin", help="List or cancel tasks from Temporal visibility; a worker deployment's builds.")
admin.add_command(
    _operator_command(
        "tasks",
        OperatorSettings,
        _admin_args("admin tasks"),
        _admin_runner("admin_commands:run_admin_tasks"),
        "List the tasks that match, newest first.",
        [*_FILTERS],
        ADMIN_EXIT_STATUSES,
    )
)
admin.add_command(
    _operator_command(
        "cancel",
        OperatorSettings,
        _admin_args("admin cancel"),
        _admin_runner("admin_commands:run_admin_cancel"),
        "Cancel the running tasks named (TASK_ID: a task ID or a workflow ID; with --owner, that principal's) "
        "or, without any, those that match the filters; asks first.",
        [
            click.Argument(["task_ids"], metavar="[TASK_ID]...", nargs=-1),
            *_FILTERS,
            click.Option(["--yes"], is_flag=True, help="do not ask before cancelling"),
        ],
        ADMIN_EXIT_STATUSES,
    )
)
admin.add_command(
    _operator_command(
        "deployment",
        DeploymentSettings,
        _deployment_args("admin deployment"),
        _admin_runner("deployment_admin:run_deployment"),
        "A worker deployment's builds: current, draining, drained.",
        [click.Option(["--json"], is_flag=True, help="one JSON document on stdout")],
        ADMIN_EXIT_STATUSES,
    )
)
admin.add_command(
    _operator_command(
        "set-current",
        DeploymentSettings,
        _deployment_args("admin set-current"),
        _admin_runner("deployment_admin:run_set_current"),
        "Send new tasks to this build (after `audit --verify`); pinned tasks stay on theirs.",
        [
            click.Option(["--build-id"], required=True, metavar="ID", help="the build to make current"),
            click.Option(
                ["--wait"],
                type=float,
                default=10.0,
                metavar="SECONDS",
                help="how long to wait for the build's workers to poll",
            ),
        ],
        ADMIN_EXIT_STATUSES,
    )
)
