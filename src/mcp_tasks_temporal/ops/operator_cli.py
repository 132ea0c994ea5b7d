"""Operator commands over the Temporal connection: `audit`, `admin tasks`, `admin cancel`.

They talk to Temporal directly, never to an MCP server, so nothing here is
reachable over MCP; whoever runs them needs the namespace's credentials.

    mcp-tasks-temporal audit 6f1c... --principal alice --format markdown
    mcp-tasks-temporal audit 'mcp-task/<owner key>/6f1c...' --verify
    mcp-tasks-temporal admin tasks --owner alice --status input_required --older-than 7d
    mcp-tasks-temporal admin cancel --tool build --older-than 2d --yes

Exit statuses: 0 done, 1 `--verify` found the code incompatible with the
history, 2 usage or an unknown task, 3 the operator declined `admin cancel`, 6 Temporal unreachable.
"""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any

from mcp.server.request_state import compact_json
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.ops.admin import ListedTask, TaskFilter, list_tasks
from mcp_tasks_temporal.ops.audit import ReplayMismatch, TaskNotFound, TaskRuns, build_story, load_runs, verify
from mcp_tasks_temporal.ops.audit_render import render_markdown, render_text
from mcp_tasks_temporal.ops.cli_options import KEYS_ENV
from mcp_tasks_temporal.ops.option_values import codec_from_args, connection_options_from_args, storage_from_args
from mcp_tasks_temporal.ops.settings import environment, owner_keying
from mcp_tasks_temporal.sdk_compat import workflow_definition
from mcp_tasks_temporal.temporal.codec import ENCODING
from mcp_tasks_temporal.temporal.connection import connect as connect_temporal_client
from mcp_tasks_temporal.temporal.ids import WORKFLOW_ID_PREFIX, is_task_id
from mcp_tasks_temporal.temporal.payload_storage import open_storage
from mcp_tasks_temporal.temporal.web_ui import web_ui_link

EXIT_INCOMPATIBLE = 1
EXIT_USAGE = 2
EXIT_DECLINED = 3
_storage_for_command = AsyncExitStack()
"""The payload storage client a one-shot command opens, closed when the process ends."""


async def connect(args: argparse.Namespace) -> Client:
    """One connection for the operator commands; the identity says who acted in the task's history.

    The same settings and codec as the front and the workers, so an encrypted
    history reads as plain text here and nowhere else.
    """
    owner_keying()  # a secret too short stops the command, before it connects
    identity = f"mcp-tasks-temporal {args.command} {getpass.getuser()}@{socket.gethostname()}"
    # Open for the rest of this one-shot command: an audit reads stored results, a replay stored activity results.
    storage = await _storage_for_command.enter_async_context(open_storage(storage_from_args(args)))
    client = await connect_temporal_client(
        connection_options_from_args(args),
        codec=codec_from_args(args),
        external_storage=storage,
        environ=environment(),
        identity=identity,
    )
    args.namespace = client.namespace
    return client


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _fail(message: str, code: int = EXIT_USAGE) -> _Exit:
    print(f"mcp-tasks-temporal: {message}", file=sys.stderr, flush=True)
    return _Exit(code)


def exit_status(
    command: Callable[[argparse.Namespace], Awaitable[None]],
) -> Callable[[argparse.Namespace], Awaitable[None]]:
    """Leave the exit status in `args.exit_status` for `main`.

    A SystemExit raised inside the event loop keeps the Temporal client alive in its
    traceback until interpreter shutdown, where dropping it aborts the process.
    """

    async def run(args: argparse.Namespace) -> None:
        try:
            await command(args)
        except _Exit as exit_:
            args.exit_status = exit_.code

    return run


def principal_of(name: str, jwt_issuer: str | None = None) -> str:
    """The principal string the front server derives from a bearer token, for a name or a JSON triple.

    The server binds tasks to `["client_id", issuer, "subject"]` of the token: the static
    token verifier reports the file's name as client and subject with no issuer; the JWT
    verifier the principal claim as both, with the token's issuer (the front's
    `--jwt-issuer`, which `jwt_issuer` names here). Other verifiers: pass the triple.
    """
    if name.startswith("["):
        return name
    return compact_json((name, jwt_issuer or None, name))


# -- audit ---------------------------------------------------------------------------------


async def run_audit(args: argparse.Namespace) -> None:
    client = await connect(args)
    try:
        runs = await _find_task(client, args.task, args.principal and principal_of(args.principal, args.jwt_issuer))
        if runs is None:
            raise _fail(f"no task {args.task}" + ("" if args.principal else " (for another owner, pass --principal)"))
        link = web_ui_link(args.temporal_ui, args.namespace, runs.workflow_id) if args.temporal_ui else None
        story = await build_story(runs, client.data_converter, web_ui=link)
    except KeyError as err:
        # The data converter's word for a payload it has no codec for.
        if f"encoding {ENCODING.decode()}" not in str(err):
            raise
        raise _fail(
            f"task {args.task} is encrypted; give its keys with --codec-key-file FILE or ${KEYS_ENV} (or --codec)"
        ) from None
    if args.format == "json":
        print(json.dumps(story, indent=2, ensure_ascii=False), flush=True)
    elif args.format == "markdown":
        print(render_markdown(story), end="", flush=True)
    else:
        print(render_text(story), flush=True)
    if args.verify:
        workflows, plugins = _installed_workflows(args.app)
        missing = _missing_workflow_types(runs, workflows)
        if missing:
            hint = (
                "pass the app that defines it with --app MODULE:ATTR"
                if not args.app
                else f"{args.app} does not define it"
            )
            raise _fail(f"cannot verify: the task runs workflow {missing}, which is not installed here; {hint}")
        try:
            await verify(runs, workflows, client.data_converter, plugins=plugins)
        except ReplayMismatch as err:
            print(f"verify: INCOMPATIBLE with the workflow code installed here: {err}", file=sys.stderr, flush=True)
            raise _Exit(EXIT_INCOMPATIBLE) from None
        print(f"verify: compatible ({len(runs.histories)} run(s) replayed)", file=sys.stderr, flush=True)


def _installed_workflows(app_spec: str | None) -> tuple[list[type], list[Any]]:
    """The workflow classes a worker here would run (the app's workflow tools too), and the app's plugins."""
    from mcp_tasks_temporal.temporal import worker

    workflows = list(worker.WORKFLOWS)
    plugins: list[Any] = []
    if app_spec:
        from mcp_tasks_temporal.front.app_lookup import tasks_extension
        from mcp_tasks_temporal.ops.app_loading import load_app

        app = load_app(app_spec)
        tasks = tasks_extension(app)
        for options in tasks.workflow_tools.values():
            if options.workflow_class not in workflows:
                workflows.append(options.workflow_class)
        from mcp_tasks_temporal.temporal.plugin import McpTasksPlugin
        from mcp_tasks_temporal.temporal.sandbox import app_module_passthrough

        # The replayer gets what the worker had: the app's workflow tools with the interceptor that
        # takes their activities' status lines and questions, the sandbox pass-through and the app's plugins.
        passthrough = app_module_passthrough(options.workflow_class for options in tasks.workflow_tools.values())
        plugins = [McpTasksPlugin(tasks, app, passthrough=passthrough), *tasks.plugins]
    return workflows, plugins


def _missing_workflow_types(runs: TaskRuns, workflows: list[type]) -> str | None:
    """The task's workflow type if no class here defines it (a workflow tool of an app not given)."""
    installed = {workflow_definition(cls).name for cls in workflows}
    for history in runs.histories:
        started = history.events[0].workflow_execution_started_event_attributes
        if started.workflow_type.name not in installed:
            return started.workflow_type.name
    return None


async def _find_task(client: Client, task: str, principal: str | None) -> TaskRuns | None:
    """The task's runs: by workflow ID, by task ID and principal, or by task ID alone."""
    if task.startswith(f"{WORKFLOW_ID_PREFIX}/"):
        candidates = [task]
    elif not is_task_id(task):
        return None
    elif principal is not None:
        candidates = [candidate for candidate, _ in owner_keying().workflow_ids(task, principal)]
    else:
        candidates = [owner_keying().workflow_id(task, None)]
        # Without the principal the owner key is unknown: the task ID is unique, so look it up.
        query = f"WorkflowId STARTS_WITH '{WORKFLOW_ID_PREFIX}/'"
        async for execution in client.list_workflows(query):
            if execution.id.endswith(f"/{task}") and execution.id not in candidates:
                candidates.append(execution.id)
                break
    for candidate in candidates:
        try:
            return await load_runs(client, candidate)
        except TaskNotFound:
            continue
    return None


# -- admin ---------------------------------------------------------------------------------


def _filter(args: argparse.Namespace, *, running_only: bool = False) -> TaskFilter:
    return TaskFilter(
        owner_key=owner_keying().owner_key(principal_of(args.owner, args.jwt_issuer))
        if args.owner is not None
        else None,
        tool=args.tool,
        status=args.status,
        older_than=args.older_than,
        running_only=running_only,
    )


def _print_tasks(tasks: Sequence[ListedTask], args: argparse.Namespace) -> None:
    if not tasks:
        print("no matching tasks", file=sys.stderr, flush=True)
        return
    rows = [("TASK", "TOOL", "STATUS", "CREATED", "OWNER KEY", "BUILD")]
    rows += [(t.task_id, t.tool, _status_cell(t), t.created_at, t.owner, t.build or "-") for t in tasks]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), flush=True)
    if args.temporal_ui:
        print(f"Web UI: {web_ui_link(args.temporal_ui, args.namespace, tasks[0].workflow_id)} ...", flush=True)
    for task in tasks:
        if task.failing:
            print(f"{task.task_id}: workflow failing: {task.failing}", flush=True)


def _status_cell(task: ListedTask) -> str:
    return f"{task.status} FAILING" if task.failing else task.status


async def run_admin_tasks(args: argparse.Namespace) -> None:
    client = await connect(args)
    tasks = [task async for task in list_tasks(client, _filter(args))]
    if args.json:
        print(json.dumps({"tasks": [t.as_json() for t in tasks]}, indent=2), flush=True)
    else:
        _print_tasks(tasks, args)


async def run_admin_cancel(args: argparse.Namespace) -> None:
    client = await connect(args)
    tasks = [task async for task in list_tasks(client, _filter(args, running_only=True))]
    if not args.json:
        _print_tasks(tasks, args)
    if tasks and not args.yes:
        if not sys.stdin.isatty():
            raise _fail(f"{len(tasks)} task(s) match; pass --yes to cancel them without a prompt")
        print(f"Cancel {len(tasks)} task(s)? [y/N] ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            raise _fail("nothing cancelled", EXIT_DECLINED)
    cancelled: list[ListedTask] = []
    for task in tasks:
        try:
            # A normal workflow cancellation, as tasks/cancel does: the tool stops and the audit shows who asked.
            await client.get_workflow_handle(task.workflow_id, run_id=task.run_id).cancel(
                reason="cancelled by an operator (mcp-tasks-temporal admin cancel)"
            )
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            continue  # closed since it was listed
        cancelled.append(task)
    if args.json:
        print(json.dumps({"cancelled": [t.as_json() for t in cancelled]}, indent=2), flush=True)
    else:
        print(f"cancel requested for {len(cancelled)} task(s)", file=sys.stderr, flush=True)
