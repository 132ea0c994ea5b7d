"""A scripted OpenAI-compatible chat completions server on 127.0.0.1, for testing sub-agents.

It answers `POST /v1/chat/completions` with the next reply of a fixed script (tool calls, then a
final answer), records every request body it sees, and can hold a reply back until the test
releases it, so a test can act while a model request is in flight. No model, no network.
The project's tests and `benchmarks.agent_turns` drive `review_code` with it; point a
sub-agent's worker at it with `OPENAI_BASE_URL=server.base_url`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """One assistant message: tool calls, or plain text content."""

    tool_calls: tuple[ToolCall, ...] = ()
    content: str | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20


def calls(*tool_calls: tuple[str, dict[str, Any]], prompt_tokens: int = 100, completion_tokens: int = 20) -> Reply:
    return Reply(
        tool_calls=tuple(ToolCall(name, args) for name, args in tool_calls),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


@dataclass
class ScriptedModel:
    script: list[Reply]
    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    authorizations: list[str | None] = field(default_factory=list[str | None])
    _held: dict[int, anyio.Event] = field(default_factory=dict[int, anyio.Event])
    _arrivals: dict[int, anyio.Event] = field(default_factory=dict[int, anyio.Event])

    def reset(self, script: list[Reply]) -> None:
        """Start over with another script (the server, and its URL, stay)."""
        self.release_all()
        self.script = script
        self.requests.clear()
        self.authorizations.clear()
        self._held.clear()
        self._arrivals.clear()

    def hold(self, number: int) -> None:
        """Keep the reply to request `number` (1-based) back until `release(number)`."""
        self._held[number] = anyio.Event()

    def release(self, number: int) -> None:
        self._held[number].set()

    async def arrived(self, number: int, *, bound_s: float = 60) -> dict[str, Any]:
        """Wait (bounded) until request `number` has been received; return its body."""
        with anyio.fail_after(bound_s):
            await self._arrival(number).wait()
        return self.requests[number - 1]

    def _arrival(self, number: int) -> anyio.Event:
        return self._arrivals.setdefault(number, anyio.Event())

    def release_all(self) -> None:
        """Let every held request through (the server is stopping)."""
        for event in self._held.values():
            event.set()

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        self.authorizations.append(request.headers.get("authorization"))
        number = len(self.requests)
        self._arrival(number).set()
        held = self._held.get(number)
        if held is not None:
            await held.wait()
        if number > len(self.script):
            error = {"message": f"script exhausted: request {number} of {len(self.script)}", "type": "invalid_request"}
            return JSONResponse({"error": error}, status_code=400)
        return JSONResponse(_completion(number, body.get("model", "scripted"), self.script[number - 1]))


def _completion(number: int, model: str, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + number,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@asynccontextmanager
async def scripted_model(script: list[Reply]) -> AsyncGenerator[ScriptedModel]:
    """Serve `script` on a free port for the duration of the block."""
    model = ScriptedModel(script)
    port = _free_port()
    app = Starlette(routes=[Route("/v1/chat/completions", model.chat, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    model.base_url = f"http://127.0.0.1:{port}/v1"
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:
                await anyio.sleep(0.02)
        try:
            yield model
        finally:
            model.release_all()
            server.should_exit = True
