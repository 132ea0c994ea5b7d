"""JSON-RPC errors of the task methods, as `MCPError`s with the spec's codes; the codes of the front's limits."""

from __future__ import annotations

from typing import Final

from mcp.shared.exceptions import MCPError
from mcp_types import HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS

TOO_MANY_LISTENS: Final = -32050
"""A caller holds as many `subscriptions/listen` streams open on this front as it may (`data.maxListens`)."""
BODIES_IN_FLIGHT: Final = -32051
"""The front is reading as many request bytes as it may at once and this request did not fit in time
(`data.maxBodyBytesInFlight`); HTTP 503 with `Retry-After`: the same request may succeed shortly."""


class TaskNotFoundError(MCPError):
    """Unknown, purged, or not yours: one answer for all three, so IDs cannot be probed."""

    def __init__(self) -> None:
        super().__init__(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")


class TaskExpiredError(MCPError):
    """The task outlived its `ttlMs`; it is gone for the client even if Temporal still retains it."""

    def __init__(self) -> None:
        super().__init__(code=INVALID_PARAMS, message="Failed to retrieve task: Task has expired")


class HeaderMismatchError(MCPError):
    """`Mcp-Name` must carry the body's `taskId` on Streamable HTTP (SEP-2663 routing headers)."""

    def __init__(self) -> None:
        super().__init__(
            code=HEADER_MISMATCH, message="Header mismatch: Mcp-Name header does not match the request body's taskId"
        )


class InvalidInputResponseError(MCPError):
    """An answer to an outstanding question that is not a valid response to it."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(
            code=INVALID_PARAMS, message=f"Invalid input response for {key!r}: {problem}", data={"key": key}
        )


class AnswerNotTakenError(MCPError):
    """The task's workflow code keeps failing, so it cannot take an answer in.

    `recorded`: the answer reached the history before the failure showed (the failure came with
    it); it takes effect once the workflow resumes, and a repeat of it is ignored then.
    """

    def __init__(self, *, recorded: bool = False) -> None:
        if recorded:
            message = (
                "Answer not taken yet: the task's workflow is failing (its statusMessage says why); "
                "it is recorded and takes effect once the workflow resumes"
            )
        else:
            message = (
                "Answer not taken: the task's workflow is failing (its statusMessage says why); "
                "answer again once it resumes"
            )
        super().__init__(code=INTERNAL_ERROR, message=message, data={"recorded": recorded})
