"""Refuse request parameters that are not valid Unicode, before anything tries to store them.

JSON may spell a lone UTF-16 surrogate (`"\\ud800"`), and Python decodes it into
a string no UTF-8 encoder accepts: the first payload conversion (a task's
arguments, its `_meta`, an answer) would fail deep inside the SDK as an
internal error. It is the client's input that is wrong, so it gets `-32602`,
naming where the bad string is and never echoing it.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS


def lone_surrogate_at(value: Any, path: str = "params") -> str | None:
    """Where in `value` a string holds a lone surrogate, as a dotted path; `None` if nowhere."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if lone_surrogate_at(key) is not None:
                return f"{path}.<key>"
            printable = isinstance(key, str) and key.isprintable()
            found = lone_surrogate_at(item, f"{path}.{key}" if printable else f"{path}.<key>")
            if found:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            found = lone_surrogate_at(item, f"{path}[{index}]")
            if found:
                return found
    return None


class RejectLoneSurrogates:
    """Server middleware: `-32602` for any request whose params hold a lone surrogate."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        where = lone_surrogate_at(ctx.params) if ctx.params else None
        if where is not None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid params: {where} is not valid Unicode (a lone UTF-16 surrogate)",
            )
        return await call_next(ctx)
