"""Sub-agents in tasks: a pydantic-ai agent loop as a durable workflow tool.

Needs the `agent` extra (`pip install "mcp-tasks-temporal[agent]"`). The loop runs in the
workflow; each model request and each I/O tool call is an activity (pydantic-ai's
`TemporalDurability`), so a worker crash between two turns repeats neither. This module adds
what a task needs on top:

- the server's own model, any OpenAI-compatible endpoint: `OPENAI_BASE_URL`, `OPENAI_API_KEY`
  and the model name from `--agent-model` / `MCP_TASKS_AGENT_MODEL`;
- `TaskProgress`: each turn and tool call as the task's `statusMessage`;
- `ask_user`: a question to the main agent, as an elicitation input request of the task;
- `sub_agent_tool(...)`: registers the workflow as a task tool, the Temporal plugins the worker
  needs, and a call-time check that a model is configured.

Everything here is safe to import inside the workflow sandbox: no I/O at import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, ResolveModelId
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models import Model, ModelRequestContext, ModelResolutionContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition
from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import ValidatedToolArgs

    from mcp_tasks_temporal.front.extension import TasksExtension

AGENT_MODEL_ENV: Final = "MCP_TASKS_AGENT_MODEL"
"""The variable the commands take the model's name from (`--agent-model`); nothing here reads it."""
MODEL_PREFIX: Final = "mcp-tasks-temporal:"
"""Model IDs this module builds: `mcp-tasks-temporal:<name>` is `<name>` on the configured endpoint."""
DEFAULT_MODEL: Final = MODEL_PREFIX + "configured"
"""What a sub-agent is constructed with; each run passes the name its worker recorded (`agent_model()`)."""
NO_MODEL: Final = (
    "no model is configured for sub-agents: start the server with --agent-model NAME (or set "
    f"{AGENT_MODEL_ENV}) and point OPENAI_BASE_URL (and OPENAI_API_KEY if it needs one) at an "
    "OpenAI-compatible endpoint"
)
MODEL_ACTIVITY: Final = "mcp_tasks.agent_model"

_T = TypeVar("_T", bound=type)


@dataclass(frozen=True)
class AgentModel:
    """The model sub-agents use on this process's workers: a name on an OpenAI-compatible endpoint."""

    name: str
    base_url: str | None = None
    """The endpoint; `None` leaves it to the OpenAI client (its own `OPENAI_BASE_URL`, else OpenAI's)."""
    api_key: str | None = None
    """`None` leaves it to the OpenAI client (its own `OPENAI_API_KEY`)."""


_configured: list[AgentModel] = []
"""The model `configure_model` set, at most one: the activities that call it read it where they run."""


def configure_model(model: AgentModel | str | None) -> None:
    """Set the sub-agents' model for this process (`--agent-model` does, for `dev`, `serve` and `worker`).

    A team running the sub-agents on its own worker calls this before the worker starts; a front
    calls it too, since each sub-agent tool checks at call time that a model is configured.
    `None` (or an empty name) unsets it.
    """
    if isinstance(model, str):
        model = AgentModel(model)
    _configured.clear()
    if model is not None and model.name.strip():
        _configured.append(AgentModel(model.name.strip(), model.base_url, model.api_key))


def configured_agent_model() -> AgentModel | None:
    """The model this process was configured with, if any."""
    return _configured[0] if _configured else None


def configured_model_name() -> str | None:
    """The model name this process was configured with, if any."""
    model = configured_agent_model()
    return model.name if model is not None else None


def model_check() -> str | None:
    """The call-time check of every sub-agent tool: why it cannot run, or `None`."""
    return None if configured_model_name() else NO_MODEL


# -- the model ---------------------------------------------------------------------------


@cache
def _endpoint_model(name: str, base_url: str | None, api_key: str | None) -> Model:
    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=base_url, api_key=api_key))


def resolve_model(ctx: ModelResolutionContext[Any], model_id: str) -> Model | None:
    """Build `mcp-tasks-temporal:<name>` as `<name>` on the process's OpenAI-compatible endpoint.

    In workflow code the model only describes itself (profile, name): requests never leave the
    activities, so it gets an endpoint that is never called, and the workflow stays free of
    environment reads.
    """
    if not model_id.startswith(MODEL_PREFIX):
        return None
    name = model_id.removeprefix(MODEL_PREFIX)
    if workflow.in_workflow():
        return _endpoint_model(name, "http://127.0.0.1:9/v1", "unused")
    configured = configured_agent_model()
    if name == DEFAULT_MODEL.removeprefix(MODEL_PREFIX):
        name = configured.name if configured is not None else ""
    if not name:
        from pydantic_ai.exceptions import UserError

        raise UserError(NO_MODEL)
    base_url, api_key = (configured.base_url, configured.api_key) if configured is not None else (None, None)
    return _endpoint_model(name, base_url, api_key)


def configured_model() -> ResolveModelId[Any]:
    """The capability that lets an agent built with `DEFAULT_MODEL` use the configured endpoint."""
    return ResolveModelId(resolve_model)


@activity.defn(name=MODEL_ACTIVITY)
async def agent_model_activity() -> str:
    """The worker's configured model name: recorded in the history, so a replay uses the same one."""
    name = configured_model_name()
    if name is None:
        raise ApplicationError(NO_MODEL, type="AgentModelNotConfigured", non_retryable=True)
    return name


async def agent_model() -> str:
    """In a sub-agent workflow: the model ID to pass to `agent.run(model=...)`."""
    name: str = await workflow.execute_activity(
        MODEL_ACTIVITY, start_to_close_timeout=timedelta(seconds=30), result_type=str
    )
    return MODEL_PREFIX + name


# -- progress ----------------------------------------------------------------------------

ToolDescriber = Callable[[Mapping[str, Any]], str]


class TaskProgress(AbstractCapability[Any]):
    """Each turn and each tool call of the agent as the task's `statusMessage`.

    "turn 3: reading src/app.py": a turn is one model request. Hooks run in workflow code,
    so the status changes are part of the workflow's deterministic replay.
    """

    def __init__(self, describe: Mapping[str, ToolDescriber] | None = None) -> None:
        self._describe = dict(describe or {})

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        _status(f"turn {ctx.usage.requests + 1}: thinking")
        return request_context

    async def before_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: ValidatedToolArgs
    ) -> ValidatedToolArgs:
        describe = self._describe.get(call.tool_name)
        arguments = call.args_as_dict()
        try:
            what = describe(arguments) if describe else f"calling {call.tool_name}"
        except (KeyError, TypeError, ValueError):
            what = f"calling {call.tool_name}"
        _status(f"turn {ctx.usage.requests}: {what}")
        return args


def _status(text: str) -> None:
    if workflow.in_workflow():
        from mcp_tasks_temporal.temporal.workflow_api import set_status

        set_status(text)


# -- asking the main agent ------------------------------------------------------------------

ASK_USER_METADATA: Final = {"temporal": False}
"""Tool metadata that keeps `ask_user` in workflow code: it waits for a signal, not for I/O."""


async def ask_user(question: str) -> str:
    """Ask the person or agent that started this task a question, and wait for the answer.

    Use it when the task cannot be done well without information only they have.
    """
    if not workflow.in_workflow():
        raise RuntimeError("ask_user runs inside a sub-agent workflow")
    from mcp_tasks_temporal.temporal.contract import JSONRPC_ERROR
    from mcp_tasks_temporal.temporal.workflow_api import can_ask, request_input

    state = workflow.instance()
    number = getattr(state, "_mcp_tasks_questions", 0) + 1
    state._mcp_tasks_questions = number  # pyright: ignore[reportAttributeAccessIssue]
    request = {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": question,
            "requestedSchema": {
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Answer"}},
                "required": ["answer"],
            },
        },
    }
    if not can_ask(request):
        # A plain call from a client without elicitation: asking would end the task.
        return "Nobody can answer questions in this session. Decide with your best judgement."
    try:
        answer = await request_input(f"question_{number}", request)
    except ApplicationError as exc:
        if exc.type != JSONRPC_ERROR:
            raise
        # The client cannot be asked (no elicitation, or not running this as a task): go on without.
        return f"Nobody can answer questions in this session ({exc.message}). Decide with your best judgement."
    content = answer.get("content") if answer.get("action") == "accept" else None
    if not isinstance(content, Mapping) or not str(content.get("answer", "")).strip():  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return "They did not answer. Decide with your best judgement and say so in your findings."
    return str(content["answer"])  # pyright: ignore[reportUnknownArgumentType]


# -- wiring ------------------------------------------------------------------------------


def worker_plugins() -> list[Any]:
    """The Temporal plugins a worker running sub-agents needs.

    pydantic-ai's plugin sets the pydantic payload converter, passes pydantic-ai and its HTTP
    stack through the workflow sandbox and registers each agent's activities (from the
    workflow's `__pydantic_ai_agents__`); the second adds this module's model activity.
    """
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.plugin import SimplePlugin

    return [
        PydanticAIPlugin(),
        SimplePlugin("mcp_tasks_temporal.contrib.pydantic_ai", activities=[agent_model_activity]),
    ]


def sub_agent_tool(tasks: TasksExtension, workflow_class: _T, **options: Any) -> _T:
    """Expose a sub-agent workflow as a task tool (`TasksExtension.workflow_tool` options apply).

    Adds what every sub-agent needs: the worker plugins, and a check at call time that a model
    is configured, so a call without one gets a clear tool error instead of a task that fails later.
    """
    registered = tasks.workflow_tool(workflow_class, **options)
    for plugin in worker_plugins():
        tasks.add_plugin(plugin)
    for name, tool in tasks.workflow_tools.items():
        if tool.workflow_class is workflow_class:
            tasks.add_call_check(name, model_check)
    return registered
