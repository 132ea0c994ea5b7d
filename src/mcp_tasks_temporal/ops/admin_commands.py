"""What `admin tasks` and `admin cancel` run: tasks listed from Temporal visibility, and cancelled.

MCP has no `tasks/list`, so a client that lost its task IDs cannot find them; an
operator can, here (`admin.list_tasks`). `admin cancel` takes task IDs (mapped to
their workflows as `audit` maps them, a principal's with `--owner`) or the filters
of `admin tasks`, lists what it is about to cancel, and asks first.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.ops.admin import ListedTask, TaskFilter, list_tasks, listed_task
from mcp_tasks_temporal.ops.audit_command import task_workflow_ids
from mcp_tasks_temporal.ops.operator_args import EXIT_DECLINED, EXIT_USAGE, AdminArgs
from mcp_tasks_temporal.ops.operator_connection import connect, principal_of
from mcp_tasks_temporal.temporal.web_ui import web_ui_link

_PROG = "mcp-tasks-temporal"
CANCEL_REASON = "cancelled by an operator (mcp-tasks-temporal admin cancel)"


def _say(message: str) -> None:
    print(f"{_PROG}: {message}", file=sys.stderr, flush=True)


def _filter(args: AdminArgs, *, running_only: bool = False) -> TaskFilter:
    keying = args.settings.owner_keying()  # the front's keys, to list a principal's tasks by owner
    owner = keying.owner_key(principal_of(args.owner, args.settings.jwt_issuer)) if args.owner is not None else None
    return TaskFilter(
        owner_key=owner, tool=args.tool, status=args.status, older_than=args.older_than, running_only=running_only
    )


def _print_tasks(tasks: Sequence[ListedTask], args: AdminArgs, namespace: str) -> None:
    if not tasks:
        print("no matching tasks", file=sys.stderr, flush=True)
        return
    rows = [("TASK", "TOOL", "STATUS", "CREATED", "OWNER KEY", "BUILD")]
    rows += [(t.task_id, t.tool, _status_cell(t), t.created_at, t.owner, t.build or "-") for t in tasks]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    if args.settings.temporal_ui:
        print(f"Web UI: {web_ui_link(args.settings.temporal_ui, namespace, tasks[0].workflow_id)} ...")
    for task in tasks:
        if task.failing:
            print(f"{task.task_id}: workflow failing: {task.failing}")
    sys.stdout.flush()


def _status_cell(task: ListedTask) -> str:
    return f"{task.status} FAILING" if task.failing else task.status


async def run_admin_tasks(args: AdminArgs) -> int:
    client = await connect(args.settings, args.command)
    tasks = [task async for task in list_tasks(client, _filter(args))]
    if args.json:
        print(json.dumps({"tasks": [t.as_json() for t in tasks]}, indent=2), flush=True)
    else:
        _print_tasks(tasks, args, client.namespace)
    return 0


async def run_admin_cancel(args: AdminArgs) -> int:
    client = await connect(args.settings, args.command)
    if args.task_ids:
        if args.tool or args.status or args.older_than:
            _say("give task IDs or the filters --tool, --status, --older-than, not both")
            return EXIT_USAGE
        found = await _named_tasks(client, args)
        if isinstance(found, str):
            _say(found)
            return EXIT_USAGE
        tasks = found
    else:
        tasks = [task async for task in list_tasks(client, _filter(args, running_only=True))]
    if not args.json:
        _print_tasks(tasks, args, client.namespace)
    if tasks and not args.yes:
        if not sys.stdin.isatty():
            _say(f"{len(tasks)} task(s) match and there is no terminal to ask on; pass --yes to cancel them")
            return EXIT_USAGE
        print(f"Cancel {len(tasks)} task(s)? [y/N] ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            _say("nothing cancelled")
            return EXIT_DECLINED
    cancelled: list[ListedTask] = []
    for task in tasks:
        try:
            # A normal workflow cancellation, as tasks/cancel does: the tool stops and the audit shows who asked.
            await client.get_workflow_handle(task.workflow_id, run_id=task.run_id).cancel(reason=CANCEL_REASON)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            continue  # closed since it was listed
        cancelled.append(task)
    if args.json:
        print(json.dumps({"cancelled": [t.as_json() for t in cancelled]}, indent=2), flush=True)
    else:
        print(f"cancel requested for {len(cancelled)} task(s)", file=sys.stderr, flush=True)
    return 0


async def _named_tasks(client: Client, args: AdminArgs) -> list[ListedTask] | str:
    """The running tasks the command line names, or why one of them cannot be cancelled.

    A task ID maps to its workflow as `audit` maps it: with `--owner`, that principal's task
    (and no other's); without, an anonymous task or, by its ID, whichever owner's visibility lists.
    """
    principal = principal_of(args.owner, args.settings.jwt_issuer) if args.owner is not None else None
    tasks: list[ListedTask] = []
    for task_id in args.task_ids:
        described = None
        for candidate in await task_workflow_ids(client, args.settings.owner_keying(), task_id, principal):
            try:
                described = await client.get_workflow_handle(candidate).describe()
                break
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
        if described is None:
            owner = f" of {args.owner}" if args.owner is not None else ""
            hint = "" if args.owner is not None else "; for a task of an authenticated principal, pass --owner NAME"
            return f"no task {task_id}{owner} in namespace {client.namespace}{hint}"
        task = await listed_task(described)
        if described.status != WorkflowExecutionStatus.RUNNING:
            return f"task {task_id} already ended ({task.status}); there is nothing to cancel"
        tasks.append(task)
    return tasks
