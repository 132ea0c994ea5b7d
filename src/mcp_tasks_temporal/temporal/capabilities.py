"""Which client may be asked what: the capability an input request needs, as plain data.

Pure logic with no `mcp` import, so the front server, the tool activity and
sandboxed workflow code (`mcp_tasks_temporal.temporal.workflow_api`) all apply the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_tasks_temporal.temporal.contract import EXTENSION_ID, INVALID_PARAMS_CODE, MISSING_CAPABILITY_CODE, as_object

CAPABILITY_OF_METHOD: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


@dataclass(frozen=True)
class Refusal:
    """Why a question cannot be asked, as the JSON-RPC error the task reports."""

    code: int
    message: str
    data: dict[str, Any] | None = None


def missing_capability(request: Mapping[str, Any], capabilities: object) -> Refusal | None:
    """-32021 when the client did not declare what answering `request` needs (None when it did).

    A bare `elicitation: {}` means form support (the only mode before modes
    existed); URL-mode elicitation needs `elicitation.url`.
    """
    method = request.get("method")
    capability = CAPABILITY_OF_METHOD.get(str(method))
    if capability is None:
        return Refusal(INVALID_PARAMS_CODE, f"Unsupported input request method {method!r}")
    granted: Any = as_object(capabilities).get(capability)
    required: dict[str, Any] = {capability: {}}
    if granted is not None and capability == "elicitation":
        mode = as_object(request.get("params")).get("mode", "form")
        modes = as_object(granted)
        if mode == "url":
            granted = modes.get("url")
            required = {"elicitation": {"url": {}}}
        elif "url" in modes and "form" not in modes:
            granted = None
            required = {"elicitation": {"form": {}}}
    if granted is not None:
        return None
    return Refusal(
        MISSING_CAPABILITY_CODE,
        f"Client did not declare the {capability!r} capability this task needs",
        {"requiredCapabilities": required},
    )


ASKABLE: Final = {capability: method for method, capability in CAPABILITY_OF_METHOD.items()}
"""What a tool may declare it asks for, and the request method that asks it."""


def check_asks(asks: Iterable[str]) -> tuple[str, ...]:
    """`asks` as a tuple, or ValueError naming what a tool cannot declare."""
    declared = tuple(asks)
    unknown = [item for item in declared if item not in ASKABLE]
    if isinstance(asks, str) or unknown:
        raise ValueError(f"asks takes some of {sorted(ASKABLE)}, not {asks!r}")
    return declared


def undeclared_asks(asks: Iterable[str], capabilities: object) -> Refusal | None:
    """-32021 naming every capability in `asks` the client did not declare (None when it declared them all).

    Checked when the tool is called, so a client that could never answer learns it
    before any step runs, instead of from a task that fails at its first question.
    """
    required: dict[str, Any] = {}
    for capability in asks:
        refusal = missing_capability({"method": ASKABLE[capability]}, capabilities)
        if refusal is not None and refusal.data is not None:
            required.update(refusal.data["requiredCapabilities"])
    if not required:
        return None
    names = " and ".join(repr(name) for name in required)
    return Refusal(
        MISSING_CAPABILITY_CODE,
        f"Client did not declare the {names} {'capability' if len(required) == 1 else 'capabilities'} "
        "this tool asks for",
        {"requiredCapabilities": required},
    )


def refusal_for_revision(refusal: Refusal, *, modern: bool) -> Refusal:
    """`refusal` as told to a client without the tasks extension: what *its* revision would need.

    A 2025-11-25 client can never declare a 2026 extension: the capability is all it
    lacks (its questions come on the call's stream). A 2026-07-28 client needs the
    capability too, and then answers inside the call (`input_required`), or, declaring
    the tasks extension as well, in a task (`alternativeCapabilities`).
    """
    if refusal.code != MISSING_CAPABILITY_CODE or refusal.data is None:
        return refusal
    required: dict[str, Any] = dict(as_object(refusal.data.get("requiredCapabilities")))
    required.pop("extensions", None)
    if not required:
        return refusal
    names = " and ".join(repr(name) for name in required)
    lacked = f"Client did not declare the {names} {'capability' if len(required) == 1 else 'capabilities'}"
    if not modern:
        return Refusal(MISSING_CAPABILITY_CODE, f"{lacked} this tool asks for", {"requiredCapabilities": required})
    return Refusal(
        MISSING_CAPABILITY_CODE,
        f"{lacked} this tool asks for: with it the question comes inside the call, "
        "or, with the tasks extension too, in a task",
        {
            "requiredCapabilities": required,
            "alternativeCapabilities": {**required, "extensions": {EXTENSION_ID: {}}},
        },
    )
