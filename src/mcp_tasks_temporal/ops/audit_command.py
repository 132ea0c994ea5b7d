"""What `audit` runs: find the task, tell its story, and with `--verify` replay it against the code installed here.

Every outcome is reported the same way: with `--format json`, exactly one JSON
document on stdout (the story, the verdict, or the error that stopped it), and
one line on stderr for whoever watches; with text or Markdown, the story on stdout
and the verdict or the error on stderr. The exit status says which (`operator_cli`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from mcp_tasks_temporal.ops.audit import SCHEMA_VERSION, TaskNotFound, TaskRuns, Verification, build_story, load_runs
from mcp_tasks_temporal.ops.audit import verify as verify_runs
from mcp_tasks_temporal.ops.audit_render import render_markdown, render_text
from mcp_tasks_temporal.ops.operator_args import (
    EXIT_INCOMPATIBLE,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    EXIT_VERIFY_ERROR,
    AuditArgs,
)
from mcp_tasks_temporal.ops.operator_connection import (
    connect,
    operator_runtime,
    principal_of,
    replay_failures_logged_at_debug,
)
from mcp_tasks_temporal.sdk_compat import workflow_definition
from mcp_tasks_temporal.temporal.codec import ENCODING
from mcp_tasks_temporal.temporal.connection import TemporalConnectionError
from mcp_tasks_temporal.temporal.contract import CODEC_KEYS_ENV
from mcp_tasks_temporal.temporal.ids import WORKFLOW_ID_PREFIX, OwnerKeying, is_task_id
from mcp_tasks_temporal.temporal.web_ui import web_ui_link

_PROG = "mcp-tasks-temporal"
UPGRADE_HINT = (
    "guard the change with workflow.patched(...), or deploy it as a new build under worker versioning "
    "(docs/operations.md, 'Upgrading workflow code without breaking waiting tasks')"
)


@dataclass
class _Report:
    """What one audit found, printed once at its end."""

    args: AuditArgs
    story: dict[str, Any] | None = None
    verification: Verification | None = None
    error: dict[str, str] | None = None
    lines: list[str] = field(default_factory=list[str])

    def fail(self, kind: str, message: str, status: int) -> int:
        self.error = {"kind": kind, "message": message}
        self.lines.append(f"{_PROG}: {message}")
        if self.args.verify and self.verification is None:
            self.verification = Verification("error", message)
        return status

    def emit(self) -> None:
        if self.args.format == "json":
            print(json.dumps(self.document(), indent=2, ensure_ascii=False), flush=True)
        elif self.story is not None:
            rendered = render_markdown(self.story) if self.args.format == "markdown" else render_text(self.story) + "\n"
            print(rendered, end="", flush=True)
        for line in self.lines:
            print(line, file=sys.stderr, flush=True)

    def document(self) -> dict[str, Any]:
        verification = self.verification
        document: dict[str, Any] = dict(self.story) if self.story is not None else {"schemaVersion": SCHEMA_VERSION}
        document["verify"] = verification.verdict if verification is not None else None
        document["verifyReason"] = verification.reason if verification is not None else None
        divergence = verification.divergence if verification is not None else None
        document["divergence"] = divergence.as_json() if divergence is not None else None
        document["error"] = self.error
        return document


async def run_audit(args: AuditArgs) -> int:
    """The task's story, and with `--verify` the verdict; the exit status of the outcome."""
    report = _Report(args)
    try:
        status = await _audit(args, report)
    except TemporalConnectionError as err:
        status = report.fail("unreachable", str(err), EXIT_UNREACHABLE)
    except RPCError as err:
        status = report.fail("temporal", f"Temporal refused the audit: {err.message}", EXIT_USAGE)
    report.emit()
    return status


async def _audit(args: AuditArgs, report: _Report) -> int:
    settings = args.settings
    client = await connect(settings, "audit")
    principal = principal_of(args.principal, settings.jwt_issuer) if args.principal else None
    runs = await _find_task(client, settings.owner_keying(), args.task, principal)
    if runs is None:
        hint = "" if args.principal else "; for a task of an authenticated principal, pass --principal NAME"
        return report.fail("not_found", f"no task {args.task} in namespace {client.namespace}{hint}", EXIT_USAGE)
    link = web_ui_link(settings.temporal_ui, client.namespace, runs.workflow_id) if settings.temporal_ui else None
    try:
        report.story = await build_story(runs, client.data_converter, web_ui=link)
    except KeyError as err:
        # The data converter's word for a payload it has no codec for.
        if f"encoding {ENCODING.decode()}" not in str(err):
            raise
        message = f"task {args.task} is encrypted; give its keys with --codec-key-file FILE or ${CODEC_KEYS_ENV}"
        return report.fail("encrypted", message + " (or --codec)", EXIT_USAGE)
    if not args.verify:
        return 0
    report.verification = await _verify(runs, client, settings.app)
    verdict = report.verification
    if verdict.verdict == "compatible":
        report.lines.append(f"verify: compatible ({verdict.runs_replayed} run(s) replayed)")
        return 0
    if verdict.verdict == "incompatible":
        report.lines.append(
            f"verify: INCOMPATIBLE with the workflow code installed here: {verdict.reason}; {UPGRADE_HINT}"
        )
        return EXIT_INCOMPATIBLE
    report.lines.append(f"verify: error: {verdict.reason}")
    return EXIT_VERIFY_ERROR


async def _verify(runs: TaskRuns, client: Client, app_spec: str | None) -> Verification:
    workflows, plugins = _installed_workflows(app_spec)
    missing = _missing_workflow_type(runs, workflows)
    if missing:
        hint = (
            "pass the app that defines it with --app MODULE:ATTR" if not app_spec else f"{app_spec} does not define it"
        )
        return Verification("error", f"the task runs workflow {missing}, which is not installed here; {hint}")
    with replay_failures_logged_at_debug():
        return await verify_runs(runs, workflows, client.data_converter, plugins=plugins, runtime=operator_runtime())


def _installed_workflows(app_spec: str | None) -> tuple[list[type], list[Any]]:
    """The workflow classes a worker here would run (the app's workflow tools too), and the app's plugins."""
    from mcp_tasks_temporal.temporal import worker

    workflows = list(worker.WORKFLOWS)
    plugins: list[Any] = []
    if app_spec:
        from mcp_tasks_temporal.front.app_lookup import tasks_extension
        from mcp_tasks_temporal.ops.app_loading import load_app
        from mcp_tasks_temporal.temporal.plugin import McpTasksPlugin
        from mcp_tasks_temporal.temporal.sandbox import app_module_passthrough

        app = load_app(app_spec)
        tasks = tasks_extension(app)
        for options in tasks.workflow_tools.values():
            if options.workflow_class not in workflows:
                workflows.append(options.workflow_class)
        # The replayer gets what the worker had: the app's workflow tools with the interceptor that
        # takes their activities' status lines and questions, the sandbox pass-through and the app's plugins.
        passthrough = app_module_passthrough(options.workflow_class for options in tasks.workflow_tools.values())
        plugins = [McpTasksPlugin(tasks, app, passthrough=passthrough), *tasks.plugins]
    return workflows, plugins


def _missing_workflow_type(runs: TaskRuns, workflows: list[type]) -> str | None:
    """The task's workflow type if no class here defines it (a workflow tool of an app not given)."""
    installed = {workflow_definition(cls).name for cls in workflows}
    for history in runs.histories:
        started = history.events[0].workflow_execution_started_event_attributes
        if started.workflow_type.name not in installed:
            return started.workflow_type.name
    return None


async def _find_task(client: Client, keying: OwnerKeying, task: str, principal: str | None) -> TaskRuns | None:
    for candidate in await task_workflow_ids(client, keying, task, principal):
        try:
            return await load_runs(client, candidate)
        except TaskNotFound:
            continue
    return None


async def task_workflow_ids(client: Client, keying: OwnerKeying, task: str, principal: str | None) -> list[str]:
    """The workflow IDs a task reference may name: itself, the principal's, or by task ID alone.

    A workflow ID is taken as it is; a task ID with its principal maps to that principal's
    workflow IDs (the current owner key, and the legacy one in a migration window); without
    the principal, the anonymous task of that ID, then whichever owner's visibility lists.
    """
    if task.startswith(f"{WORKFLOW_ID_PREFIX}/"):
        return [task]
    if not is_task_id(task):
        return []
    if principal is not None:
        return [candidate for candidate, _ in keying.workflow_ids(task, principal)]
    candidates = [keying.workflow_id(task, None)]
    # Without the principal the owner key is unknown: the task ID is unique, so look it up.
    query = f"WorkflowId STARTS_WITH '{WORKFLOW_ID_PREFIX}/'"
    async for execution in client.list_workflows(query):
        if execution.id.endswith(f"/{task}") and execution.id not in candidates:
            candidates.append(execution.id)
            break
    return candidates
