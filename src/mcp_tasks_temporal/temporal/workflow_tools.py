"""A user's `@workflow.defn` class as an MCP tool: its options, its schemas and its synchronous form.

The tool's arguments are the fields of the `@workflow.run` method's single
parameter (a dataclass or pydantic model; a plain parameter is one argument
under its own name; no parameter, no arguments). The app gets an ordinary
`mcp` tool with that signature, so `tools/list`, argument validation and the
answer to bad arguments are the SDK's own; calling it synchronously (a client
without the tasks extension) starts the workflow and waits for its result.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast, runtime_checkable

from pydantic import BaseModel, Field, TypeAdapter

from mcp_tasks_temporal.sdk_compat import workflow_definition as sdk_workflow_definition
from mcp_tasks_temporal.temporal.deployment import Versioning, check_versioning, versioning_of

TaskPolicy = Literal["never", "optional", "required"]

_UNSTRUCTURED: tuple[Any, ...] = (None, type(None), str, Any, inspect.Signature.empty)


@runtime_checkable
class WorkflowToolRegistry(Protocol):
    """What a worker reads from the app's extension: its workflow tools (the worker imports no front code)."""

    @property
    def workflow_tools(self) -> Mapping[str, WorkflowToolOptions]: ...


@dataclass(frozen=True)
class WorkflowToolOptions:
    """How one workflow class is exposed; `ttl_ms`/`poll_interval_ms` are resolved by the extension."""

    workflow_class: type
    workflow_name: str
    name: str
    description: str
    task_queue: str | None
    """`None`: the app's task queue."""
    policy: TaskPolicy
    ttl_ms: Any
    poll_interval_ms: Any
    activities: tuple[Callable[..., Any], ...]
    parameter: inspect.Parameter | None
    """The run method's parameter, with its annotation resolved; `None` when it takes none."""
    return_type: Any
    versioning: Versioning = "pinned"
    declares_versioning: bool = False
    """Whether the class's own `@workflow.defn` says `versioning`; if not, the task's start says it."""

    @classmethod
    def of(
        cls,
        workflow_class: type,
        *,
        name: str | None,
        description: str | None,
        task_queue: str | None,
        policy: TaskPolicy,
        ttl_ms: Any,
        poll_interval_ms: Any,
        activities: Sequence[Callable[..., Any]],
        versioning: Versioning | None = None,
    ) -> WorkflowToolOptions:
        definition = workflow_definition(workflow_class)
        if definition.name is None:
            raise ValueError(f"{workflow_class.__name__} is a dynamic workflow; a tool needs a named workflow type")
        declared = versioning_of(definition.versioning_behavior)
        if versioning is not None:
            check_versioning(versioning)
            if declared is not None and declared != versioning:
                raise ValueError(
                    f"{workflow_class.__name__} declares versioning_behavior {declared!r} in @workflow.defn; "
                    f"versioning={versioning!r} contradicts it (versioning is per workflow type)"
                )
        run = definition.run_fn
        hints = typing.get_type_hints(run)
        parameters = [p for p in inspect.signature(run).parameters.values() if p.name != "self"]
        if len(parameters) > 1 or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
            raise ValueError(
                f"{workflow_class.__name__}.{run.__name__} takes {len(parameters)} parameters; a workflow tool's run "
                "method takes one (a dataclass or pydantic model whose fields are the tool's arguments) or none"
            )
        parameter = parameters[0].replace(annotation=hints.get(parameters[0].name, Any)) if parameters else None
        return cls(
            workflow_class=workflow_class,
            workflow_name=definition.name,
            name=name or definition.name,
            description=description or inspect.getdoc(workflow_class) or inspect.getdoc(run) or "",
            task_queue=task_queue,
            policy=policy,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            activities=tuple(activities),
            parameter=parameter,
            return_type=hints.get("return", Any),
            versioning=declared or versioning or "pinned",
            declares_versioning=declared is not None,
        )

    @property
    def takes_fields(self) -> bool:
        """Whether the tool's arguments are the fields of the run method's parameter (else the parameter itself)."""
        return self.parameter is not None and _is_record(self.parameter.annotation)

    def workflow_args(self, arguments: Mapping[str, Any]) -> list[Any]:
        """The run method's arguments from the tool's validated arguments."""
        if self.parameter is None:
            return []
        if self.takes_fields:
            return [TypeAdapter(self.parameter.annotation).validate_python(dict(arguments))]
        return [arguments[self.parameter.name]] if self.parameter.name in arguments else []

    def tool_signature(self, context_type: type) -> inspect.Signature:
        """The signature of the `mcp` tool that stands for this workflow (plus a context parameter)."""
        arguments = _arguments(self.parameter)
        context = inspect.Parameter("mcp_tool_context", inspect.Parameter.KEYWORD_ONLY, annotation=context_type)
        return inspect.Signature([*arguments, context], return_annotation=self.return_type)

    def output_schema(self) -> dict[str, Any] | None:
        """The tool's `outputSchema`: the return type's schema where the result is structured."""
        if self.return_type in _UNSTRUCTURED:
            return None
        schema = TypeAdapter(self.return_type).json_schema(mode="serialization")
        if schema.get("type") == "object":
            return schema
        if "anyOf" in schema or "oneOf" in schema:
            # Whether a value is wrapped in {"result": ...} depends on what it turns out to be
            # (an object is not, anything else is), so no single schema describes every result.
            return None
        definitions = schema.pop("$defs", None)
        wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        if definitions:
            wrapped["$defs"] = definitions
        return wrapped


def workflow_definition(workflow_class: type) -> Any:
    """temporalio's definition of a `@workflow.defn` class (name, run method)."""
    try:
        return sdk_workflow_definition(workflow_class)
    except ValueError:
        raise ValueError(f"{workflow_class!r} is not a @workflow.defn class") from None


def tool_function(
    options: WorkflowToolOptions,
    context_type: type,
    run: Callable[[WorkflowToolOptions, dict[str, Any], Any], Awaitable[Any]],
) -> Callable[..., Awaitable[Any]]:
    """An `mcp` tool function with the workflow's arguments; calling it runs the workflow via `run`."""

    async def workflow_tool(**kwargs: Any) -> Any:
        context = kwargs.pop("mcp_tool_context")
        return await run(options, kwargs, context)

    signature = options.tool_signature(context_type)
    workflow_tool.__signature__ = signature  # pyright: ignore[reportFunctionMemberAccess]
    workflow_tool.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    workflow_tool.__annotations__["return"] = signature.return_annotation
    workflow_tool.__name__ = options.name
    workflow_tool.__doc__ = options.description
    return workflow_tool


def _is_record(annotation: object) -> bool:
    if not isinstance(annotation, type):
        return False
    return issubclass(annotation, BaseModel) or dataclasses.is_dataclass(cast(object, annotation))


def _arguments(parameter: inspect.Parameter | None) -> list[inspect.Parameter]:
    if parameter is None:
        return []
    annotation = parameter.annotation
    keyword = inspect.Parameter.KEYWORD_ONLY
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        made: list[inspect.Parameter] = []
        for name, info in annotation.model_fields.items():
            required = info.is_required()
            described = Field(description=info.description, alias=info.alias)
            made.append(
                inspect.Parameter(
                    name,
                    keyword,
                    annotation=typing.Annotated[(info.annotation, *info.metadata, described)],  # pyright: ignore[reportInvalidTypeArguments]
                    default=inspect.Parameter.empty if required else info.get_default(call_default_factory=True),
                )
            )
        return made
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        made: list[inspect.Parameter] = []
        for item in dataclasses.fields(annotation):
            if not item.init:
                continue
            default: Any = inspect.Parameter.empty
            if item.default is not dataclasses.MISSING:
                default = item.default
            elif item.default_factory is not dataclasses.MISSING:
                default = item.default_factory()
            made.append(inspect.Parameter(item.name, keyword, annotation=hints.get(item.name, Any), default=default))
        return made
    return [parameter.replace(kind=keyword)]
