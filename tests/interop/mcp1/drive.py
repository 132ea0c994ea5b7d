"""Drives a live front with an mcp 1.x client, in the separate venv where mcp 1.x is installed.

mcp 1.x and langchain-mcp-adapters (which requires mcp<2) cannot share the test venv's
mcp 2.x, so the tests run this script there: `drive.py CLIENT ACTION URL [JSON]`, with
CLIENT `mcp1` (the SDK's own `ClientSession`) or `langchain` (`MultiServerMCPClient`).
It prints one JSON line: what the client got (result or error code), the progress it
received, the questions it answered. The script imports nothing from the project.

Actions: `list`; `call` (a plain call, with a progress callback and an elicitation
callback that approves); `cancel` (a plain call, cancelled once `wait_for` exists: by
`notifications/cancelled` for mcp1, by cancelling the tool's coroutine for langchain);
`task` and `task_cancel` (mcp1's experimental SEP-1686 task API).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

WAIT_S = 30.0
"""Every wait here is bounded: a front that never answers fails the test, it does not hang it."""

progress: list[dict[str, Any]] = []
questions: list[str] = []


async def on_progress(value: float, total: float | None, message: str | None, *_: Any) -> None:
    progress.append({"progress": value, "total": total, "message": message})


async def approve(_context: Any, params: types.ElicitRequestParams, *_: Any) -> types.ElicitResult:
    questions.append(params.message)
    return types.ElicitResult(action="accept", content={"approve": True})


async def until_exists(path: str) -> None:
    with anyio.fail_after(WAIT_S):
        while not Path(path).exists():
            await anyio.sleep(0.05)


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return {"is_error": result.isError, "text": texts, "structured": result.structuredContent}


async def mcp1(action: str, url: str, args: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        read, write, session_id = await stack.enter_async_context(streamablehttp_client(url))
        session = await stack.enter_async_context(ClientSession(read, write, elicitation_callback=approve))
        init = await session.initialize()
        report["protocol_version"] = init.protocolVersion
        report["server_tasks"] = init.capabilities.tasks is not None
        report["session_id"] = session_id()
        if action == "list":
            report["tools"] = sorted(tool.name for tool in (await session.list_tools()).tools)
        elif action == "call":
            result = await session.call_tool(args["tool"], args["arguments"], progress_callback=on_progress)
            report["result"] = outcome(result)
        elif action == "cancel":
            request_id = session._request_id  # the ID the next request gets: mcp 1.x numbers them in order
            call = asyncio.ensure_future(session.call_tool(args["tool"], args["arguments"]))
            await until_exists(args["wait_for"])
            await session.send_notification(
                types.ClientNotification(
                    types.CancelledNotification(
                        params=types.CancelledNotificationParams(requestId=request_id, reason="user stopped it")
                    )
                )
            )
            report["cancelled_request"] = request_id
            with anyio.move_on_after(WAIT_S):
                try:
                    report["result"] = outcome(await call)
                except McpError as error:
                    report["error"] = error.error.code
            if not call.done():
                report["still_waiting"] = True
                call.cancel()
        elif action in ("task", "task_cancel"):
            created = await session.experimental.call_tool_as_task(args["tool"], args["arguments"])
            task_id = created.task.taskId
            report["created"] = created.task.status
            if action == "task_cancel":
                await until_exists(args["wait_for"])
                report["cancel"] = (await session.experimental.cancel_task(task_id)).status
            else:
                with anyio.fail_after(WAIT_S):
                    result = await session.experimental.get_task_result(task_id, types.CallToolResult)
                report["result"] = outcome(result)
            report["final"] = (await session.experimental.get_task(task_id)).status
        else:
            raise SystemExit(f"unknown action {action}")
    return report


async def langchain(action: str, url: str, args: dict[str, Any]) -> dict[str, Any]:
    from langchain_mcp_adapters.callbacks import Callbacks
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient(
        {"demo": {"transport": "streamable_http", "url": url}},
        callbacks=Callbacks(on_progress=on_progress, on_elicitation=approve),
    )
    tools = {tool.name: tool for tool in await client.get_tools()}
    report: dict[str, Any] = {"tools": sorted(tools)}
    if action == "list":
        return report
    tool = tools[args["tool"]]
    if action == "call":
        # Invoked as a model's tool call, the tool answers with a ToolMessage: content and the structured artifact.
        call = {"type": "tool_call", "id": "call-1", "name": tool.name, "args": args["arguments"]}
        message = await tool.ainvoke(call)
        report["result"] = {"content": message.content, "artifact": message.artifact, "status": message.status}
    elif action == "cancel":
        call = asyncio.ensure_future(tool.ainvoke(args["arguments"]))
        await until_exists(args["wait_for"])
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            report["cancelled"] = True
    else:
        raise SystemExit(f"unknown action {action}")
    return report


def main() -> None:
    client, action, url = sys.argv[1:4]
    args: dict[str, Any] = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    started = time.monotonic()
    drive = {"mcp1": mcp1, "langchain": langchain}[client]
    try:
        report = asyncio.run(drive(action, url, args))
    except McpError as error:
        report = {"error": error.error.code, "message": error.error.message, "data": error.error.data}
    report["progress"] = progress
    report["questions"] = questions
    report["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
