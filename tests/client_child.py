"""A client process a test can kill: `python -m tests.client_child MODE SERVER JOURNAL [TOOL ARGS]`.

SERVER is a URL, or `stdio:` and the command line of a stdio server.

    call    call TOOL with ARGS (JSON) and print the result's first text; the test kills it mid-wait
    resume  wait for every task the journal holds for SERVER, printing one JSON line per task
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import anyio
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from mcp_tasks_temporal.client import TasksClient


def _server(spec: str) -> str | StdioServerParameters:
    if spec.startswith("stdio:"):
        command = shlex.split(spec.removeprefix("stdio:"))
        return StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ), cwd=os.getcwd())
    return spec


def first_text(result: CallToolResult) -> str:
    return next((block.text for block in result.content if isinstance(block, TextContent)), "")


async def main(argv: list[str]) -> None:
    mode, server, journal, *rest = argv
    async with TasksClient(_server(server), journal=journal) as client:
        if mode == "call":
            tool, arguments = rest
            result = await client.call_tool(tool, json.loads(arguments))
            print(first_text(result), flush=True)
        elif mode == "resume":
            for handle in client.pending():
                result = await handle.result()
                line = {"taskId": handle.task_id, "tool": handle.tool, "text": first_text(result)}
                print(json.dumps(line), flush=True)
        else:
            raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
