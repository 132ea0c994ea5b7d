"""Where a replay diverged from a recorded history, named as the workflow's author wrote it.

The replayer reports a nondeterminism error in the terms of Temporal's state machines
("Activity machine does not handle this event: HistoryEvent(id: 21,
UpsertWorkflowSearchAttributes)"). This module turns that into the step of the
workflow: the recorded side read from the history (the activity `build`,
`set_status("deploying")`, a 30 s timer, a `workflow.patched` marker), the code's side
from what the code asked for while it replayed (`CommandRecorder`, an interceptor on
the replayer) and from the machine the replayer names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from temporalio import converter as temporal_converter
from temporalio import worker
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter

from mcp_tasks_temporal.temporal.contract import RUN_TOOL_ACTIVITY, Memo, as_object
from mcp_tasks_temporal.temporal.feed_contract import STREAM_PUBLISH_SIGNAL

_COMMAND_EVENTS: Final = frozenset(
    {
        "activity_task_scheduled_event_attributes",
        "activity_task_cancel_requested_event_attributes",
        "timer_started_event_attributes",
        "timer_canceled_event_attributes",
        "marker_recorded_event_attributes",
        "upsert_workflow_search_attributes_event_attributes",
        "workflow_properties_modified_event_attributes",
        "start_child_workflow_execution_initiated_event_attributes",
        "signal_external_workflow_execution_initiated_event_attributes",
        "request_cancel_external_workflow_execution_initiated_event_attributes",
        "nexus_operation_scheduled_event_attributes",
        "nexus_operation_cancel_requested_event_attributes",
        "workflow_execution_completed_event_attributes",
        "workflow_execution_failed_event_attributes",
        "workflow_execution_canceled_event_attributes",
        "workflow_execution_continued_as_new_event_attributes",
    }
)
"""Events that record a command of the workflow code: the steps a replay must reproduce in order."""

_MACHINE = re.compile(r"(?P<machine>[A-Za-z ]+?) machine does not handle this event: HistoryEvent\(id: (?P<id>\d+)")
_NO_COMMAND = re.compile(r"No command scheduled for event HistoryEvent\(id: (?P<id>\d+)")
_ACTIVITY_TYPE = re.compile(
    r"Activity type of scheduled event '(?P<recorded>[^']*)' does not match activity type of activity command "
    r"'(?P<code>[^']*)'"
)
_EVENT_ID = re.compile(r"HistoryEvent\(id: (?P<id>\d+)")
_NONDETERMINISM = re.compile(r"Nondeterminism error: ((?:[^\"\\]|\\.)*)")
_FAILURE_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')
_FAILURE_TYPE = re.compile(r'r#type: "([^"]*)"')

_CODE_STEP_BY_MACHINE: Final[Mapping[str, tuple[str, str]]] = {
    "Timer": ("timer", "a timer (workflow.sleep, or a wait with a timeout)"),
    "Complete workflow": ("return", "return: the workflow completes here"),
    "Fail workflow": ("raise", "raise: the workflow fails here"),
    "Cancel workflow": ("cancelled", "the workflow ends cancelled here"),
    "Continue as new": ("continue_as_new", "continue_as_new"),
    "Cancel external": ("cancel_external", "a cancel of another workflow"),
    "Upsert search attributes": ("search_attributes", "a search attribute upsert (a status change)"),
    "Modify workflow properties": ("memo", "a memo upsert (set_status, request_input)"),
    "Patch": ("patch", "a workflow.patched(...) check"),
}


@dataclass(frozen=True)
class Step:
    """One command of a workflow: what it is (`activity`, `status`, `timer`, ...) and its name as written."""

    kind: str
    name: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class Divergence:
    """The first step at which the code no longer does what the history recorded.

    Attributes:
        run_id: The run whose history diverged (a task that continued as new has several).
        step: The step's position among the run's recorded commands, from 1.
        event_id: The history event of the recorded step (`None` when the code did more than the history holds).
        recorded: What the history holds at that step (`None`: nothing, the code went further).
        code: What the installed code does there instead (`None`: nothing, it stopped issuing commands).
        replayer_message: The replayer's own words, for whoever knows Temporal's state machines.
    """

    run_id: str
    step: int
    event_id: int | None
    recorded: Step | None
    code: Step | None
    replayer_message: str

    def reason(self) -> str:
        where = f"step {self.step}" + (f" (event {self.event_id})" if self.event_id is not None else "")
        if self.recorded is None:
            goes_on = self.code.name if self.code is not None else "another command"
            return f"the history ends before {where}; the code installed here goes on with {goes_on}"
        said = f"at {where} the history recorded {self.recorded.name}; the code installed here"
        if self.code is None:
            return f"{said} no longer issues a command there"
        if self.code.kind == "failure":
            return f"{said} fails there: {self.code.name}"
        return f"{said} has {self.code.name} there instead"

    def as_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "step": self.step,
            "eventId": self.event_id,
            "recorded": self.recorded.as_json() if self.recorded is not None else None,
            "code": self.code.as_json() if self.code is not None else None,
            "replayerMessage": self.replayer_message,
        }


@dataclass
class CommandRecorder(worker.Interceptor):
    """Records the named commands (activities, children, signals, Nexus operations) a replayed workflow issues."""

    steps: list[Step] = field(default_factory=list[Step])

    def workflow_interceptor_class(
        self, input: worker.WorkflowInterceptorClassInput
    ) -> type[worker.WorkflowInboundInterceptor] | None:
        steps = self.steps

        class Outbound(worker.WorkflowOutboundInterceptor):
            def start_activity(self, input: worker.StartActivityInput) -> Any:
                steps.append(Step("activity", f"activity {input.activity!r}"))
                return super().start_activity(input)

            def start_local_activity(self, input: worker.StartLocalActivityInput) -> Any:
                steps.append(Step("local_activity", f"local activity {input.activity!r}"))
                return super().start_local_activity(input)

            async def start_child_workflow(self, input: worker.StartChildWorkflowInput) -> Any:
                steps.append(Step("child_workflow", f"child workflow {input.workflow!r}"))
                return await super().start_child_workflow(input)

            async def signal_external_workflow(self, input: worker.SignalExternalWorkflowInput) -> None:
                steps.append(_signal_step(input.signal))
                await super().signal_external_workflow(input)

            async def start_nexus_operation(self, input: worker.StartNexusOperationInput[Any, Any]) -> Any:
                operation = (
                    input.operation if isinstance(input.operation, str) else getattr(input.operation, "__name__", "?")
                )
                steps.append(Step("nexus", f"Nexus operation {input.service}.{operation}"))
                return await super().start_nexus_operation(input)

        class Inbound(worker.WorkflowInboundInterceptor):
            def init(self, outbound: worker.WorkflowOutboundInterceptor) -> None:
                super().init(Outbound(outbound))

        return Inbound


def replayer_reason(err: BaseException) -> str:
    """The replayer's reason on one line, without the Rust failure dump around it."""
    text = str(err)
    found = _NONDETERMINISM.search(text)
    if found:
        return " ".join(("Nondeterminism error: " + found.group(1)).split())
    message = _FAILURE_MESSAGE.search(text)
    if message:
        kind = _FAILURE_TYPE.search(text)
        said = message.group(1).encode().decode("unicode_escape", errors="replace")
        return " ".join((f"{kind.group(1)}: {said}" if kind and kind.group(1) else said).split())
    return " ".join(text.split())


def is_nondeterminism(err: BaseException) -> bool:
    return "Nondeterminism error" in str(err) or type(err).__name__ == "NondeterminismError"


async def find_divergence(
    history: WorkflowHistory, err: BaseException, code_steps: Sequence[Step], converter: DataConverter
) -> Divergence:
    """The first diverging step of `history`, from the replayer's error and the commands the code issued."""
    message = replayer_reason(err)
    events = list(history.events)
    commands = [event for event in events if event.WhichOneof("attributes") in _COMMAND_EVENTS]
    run_id = history.run_id
    mismatch = _ACTIVITY_TYPE.search(message)
    if mismatch:
        return await _activity_mismatch(run_id, commands, mismatch, message, converter)
    found = _MACHINE.search(message) or _NO_COMMAND.search(message) or _EVENT_ID.search(message)
    if found is None:
        return await _by_named_steps(
            run_id, commands, code_steps, message, converter, failure=not is_nondeterminism(err)
        )
    event_id = int(found.group("id"))
    recorded_event = next((event for event in commands if event.event_id == event_id), None)
    step = (commands.index(recorded_event) + 1) if recorded_event is not None else _steps_before(commands, event_id) + 1
    recorded = await describe_event(recorded_event, events, converter) if recorded_event is not None else None
    code: Step | None = None
    if "machine" in found.groupdict() and found.groupdict().get("machine"):
        machine = found.group("machine").strip()
        code = _code_step(machine, commands, event_id, code_steps)
    return Divergence(run_id, step, event_id if recorded_event is not None else None, recorded, code, message)


def _steps_before(commands: Sequence[HistoryEvent], event_id: int) -> int:
    return sum(1 for event in commands if event.event_id < event_id)


def _code_step(machine: str, commands: Sequence[HistoryEvent], event_id: int, code_steps: Sequence[Step]) -> Step:
    """What the code did where the replayer's `machine` met the recorded event."""
    named = {"Activity": "activity", "Local activity": "local_activity", "Child workflow": "child_workflow"}
    named |= {"Signal external": "signal", "Nexus operation": "nexus"}
    kind = named.get(machine)
    if kind is not None:
        # The code's Nth command of that kind met the event: N is how many of them the history holds before it.
        recorded_kind = {
            "activity": "activity_task_scheduled_event_attributes",
            "child_workflow": "start_child_workflow_execution_initiated_event_attributes",
            "signal": "signal_external_workflow_execution_initiated_event_attributes",
            "nexus": "nexus_operation_scheduled_event_attributes",
        }.get(kind)
        before = sum(
            1 for event in commands if event.event_id < event_id and event.WhichOneof("attributes") == recorded_kind
        )
        mine = [step for step in code_steps if step.kind == kind]
        return mine[before] if before < len(mine) else Step(kind, f"a {kind.replace('_', ' ')}")
    kind, name = _CODE_STEP_BY_MACHINE.get(machine, ("command", f"another command ({machine} machine)"))
    return Step(kind, name)


async def _activity_mismatch(
    run_id: str, commands: Sequence[HistoryEvent], found: re.Match[str], message: str, converter: DataConverter
) -> Divergence:
    """Another activity where the history scheduled one: the first recorded activity of the recorded type."""
    recorded_type = found.group("recorded")
    scheduled = [
        event
        for event in commands
        if event.WhichOneof("attributes") == "activity_task_scheduled_event_attributes"
        and event.activity_task_scheduled_event_attributes.activity_type.name == recorded_type
    ]
    event = scheduled[0] if scheduled else None
    step = commands.index(event) + 1 if event is not None else 0
    recorded = (
        await describe_event(event, commands, converter) if event is not None else Step("activity", repr(recorded_type))
    )
    code = Step("activity", f"activity {found.group('code')!r}")
    return Divergence(run_id, step, event.event_id if event is not None else None, recorded, code, message)


async def _by_named_steps(
    run_id: str,
    commands: Sequence[HistoryEvent],
    code_steps: Sequence[Step],
    message: str,
    converter: DataConverter,
    *,
    failure: bool,
) -> Divergence:
    """No event named: compare the named commands in order; a failure of the code is its own step."""
    recorded_named = [event for event in commands if _named_kind(event) is not None]
    for index, event in enumerate(recorded_named):
        recorded = await describe_event(event, commands, converter)
        code = code_steps[index] if index < len(code_steps) else None
        if code is None or code.name != recorded.name:
            if failure:
                code = Step("failure", f"raise {message}")
            return Divergence(run_id, commands.index(event) + 1, event.event_id, recorded, code, message)
    code = (
        Step("failure", f"raise {message}")
        if failure
        else (code_steps[len(recorded_named)] if len(code_steps) > len(recorded_named) else None)
    )
    return Divergence(run_id, len(commands) + 1, None, None, code, message)


def _named_kind(event: HistoryEvent) -> str | None:
    return {
        "activity_task_scheduled_event_attributes": "activity",
        "start_child_workflow_execution_initiated_event_attributes": "child_workflow",
        "signal_external_workflow_execution_initiated_event_attributes": "signal",
        "nexus_operation_scheduled_event_attributes": "nexus",
    }.get(event.WhichOneof("attributes") or "")


async def describe_event(event: HistoryEvent, events: Sequence[HistoryEvent], converter: DataConverter) -> Step:
    """A recorded command as its author wrote it: the activity's name, the status line, the timer's duration."""
    kind = event.WhichOneof("attributes") or ""
    if kind == "activity_task_scheduled_event_attributes":
        attrs = event.activity_task_scheduled_event_attributes
        name = attrs.activity_type.name
        if name == RUN_TOOL_ACTIVITY:
            call = as_object(await _first(converter, list(attrs.input.payloads)))
            if call.get("tool"):
                return Step("activity", f"the tool {call['tool']!r} (round {call.get('round', 0)})")
        return Step("activity", f"activity {name!r}")
    if kind == "timer_started_event_attributes":
        seconds = event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta().total_seconds()
        return Step("timer", f"a timer of {_duration(seconds)} (workflow.sleep, or a wait with a timeout)")
    if kind == "timer_canceled_event_attributes":
        return Step("timer", "the cancel of a timer (a wait that ended before its timeout)")
    if kind == "workflow_properties_modified_event_attributes":
        return await _memo_step(event, converter)
    if kind == "upsert_workflow_search_attributes_event_attributes":
        return await _search_attribute_step(event, events, converter)
    if kind == "marker_recorded_event_attributes":
        return _marker_step(event)
    if kind == "start_child_workflow_execution_initiated_event_attributes":
        name = event.start_child_workflow_execution_initiated_event_attributes.workflow_type.name
        return Step("child_workflow", f"child workflow {name!r}")
    if kind == "signal_external_workflow_execution_initiated_event_attributes":
        return _signal_step(event.signal_external_workflow_execution_initiated_event_attributes.signal_name)
    if kind == "nexus_operation_scheduled_event_attributes":
        attrs = event.nexus_operation_scheduled_event_attributes
        return Step("nexus", f"Nexus operation {attrs.service}.{attrs.operation}")
    return Step(kind.removesuffix("_event_attributes"), _PLAIN.get(kind, kind.removesuffix("_event_attributes")))


def _signal_step(name: str) -> Step:
    if name == STREAM_PUBLISH_SIGNAL:
        # The engine's own signal, not the author's: a task's transitions to its feed shard.
        return Step("feed", "the task's publish to its feed shard")
    return Step("signal", f"signal {name!r} to another workflow")


_PLAIN: Final = {
    "activity_task_cancel_requested_event_attributes": "the cancel of an activity",
    "request_cancel_external_workflow_execution_initiated_event_attributes": "a cancel of another workflow",
    "nexus_operation_cancel_requested_event_attributes": "the cancel of a Nexus operation",
    "workflow_execution_completed_event_attributes": "return: the workflow completed",
    "workflow_execution_failed_event_attributes": "raise: the workflow failed",
    "workflow_execution_canceled_event_attributes": "the workflow ended cancelled",
    "workflow_execution_continued_as_new_event_attributes": "continue_as_new",
}


async def _memo_step(event: HistoryEvent, converter: DataConverter) -> Step:
    fields = event.workflow_properties_modified_event_attributes.upserted_memo.fields
    memo: dict[str, Any] = {}
    for key, payload in fields.items():
        memo[key] = await _first(converter, [payload])
    requests = as_object(memo.get(Memo.INPUT_REQUESTS))
    if requests:
        keys = ", ".join(repr(key) for key in requests)
        return Step("question", f"request_input({keys})")
    if Memo.STATUS_MESSAGE in memo and memo[Memo.STATUS_MESSAGE]:
        return Step("status", f"set_status({json.dumps(memo[Memo.STATUS_MESSAGE], ensure_ascii=False)})")
    if Memo.STATUS in memo:
        return Step("status", f"the task's status going to {memo[Memo.STATUS]!r}")
    return Step("memo", f"a memo upsert of {', '.join(sorted(memo)) or 'nothing'}")


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g}s"


async def _search_attribute_step(event: HistoryEvent, events: Sequence[HistoryEvent], converter: DataConverter) -> Step:
    """A search attribute upsert: the status change it belongs to (`set_status`, a question), when it is McpStatus.

    The project upserts `McpStatus` in the same workflow task as the memo that carries the status line
    or the question, so the memo upsert beside it names the step as the workflow's author wrote it.
    """
    beside = _same_workflow_task(event, events, "workflow_properties_modified_event_attributes")
    if beside is not None:
        step = await _memo_step(beside, converter)
        if step.kind in ("status", "question"):
            return Step(step.kind, f"{step.name} (its McpStatus search attribute)")
    fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
    payload_converter = temporal_converter.default().payload_converter
    values: dict[str, Any] = {key: payload_converter.from_payload(payload) for key, payload in fields.items()}
    status: Any = values.get("McpStatus")
    if isinstance(status, list):
        status = cast("list[Any]", status)[0] if status else None
    if status is not None:
        return Step("status", f"the task's status going to {status!r} (its McpStatus search attribute)")
    return Step("search_attributes", f"an upsert of the search attributes {', '.join(sorted(values))}")


def _same_workflow_task(event: HistoryEvent, events: Sequence[HistoryEvent], kind: str) -> HistoryEvent | None:
    """The event of `kind` among the commands of `event`'s workflow task: the next one, else the one before.

    A status change upserts the search attribute first and its memo right after (`workflow_api`), so
    the memo that follows a `McpStatus` upsert is the one it belongs to.
    """
    ids = [item.event_id for item in events]
    if event.event_id not in ids:
        return None
    at = ids.index(event.event_id)
    for step in (1, -1):
        index = at + step
        while 0 <= index < len(events) and events[index].WhichOneof("attributes") in _COMMAND_EVENTS:
            if events[index].WhichOneof("attributes") == kind:
                return events[index]
            index += step
    return None


def _marker_step(event: HistoryEvent) -> Step:
    attrs = event.marker_recorded_event_attributes
    details = {key: list(payloads.payloads) for key, payloads in attrs.details.items()}
    payload_converter = temporal_converter.default().payload_converter
    if attrs.marker_name == "core_patch" and details.get("patch_data"):
        data = as_object(payload_converter.from_payload(details["patch_data"][0]))
        return Step("patch", f"workflow.patched({data.get('id')!r})")
    if attrs.marker_name == "core_local_activity" and details.get("data"):
        data = as_object(payload_converter.from_payload(details["data"][0]))
        return Step("local_activity", f"local activity {data.get('activity_type')!r}")
    return Step("marker", f"the marker {attrs.marker_name!r}")


async def _first(converter: DataConverter, payloads: list[Any]) -> Any:
    if not payloads:
        return None
    try:
        return (await converter.decode(payloads))[0]
    except Exception:  # a payload this process cannot read: the step is still named by its kind
        return None
