"""The benchmark's workload on fastmcp-tasks, the peer it is compared with.

The same tools as `mcp_tasks_temporal.testing.conformance` (`slow_compute`, `confirm_delete`, `greet`), written
the way fastmcp-tasks documents them, so both servers answer the same requests:

    FASTMCP_DOCKET_URL=redis://127.0.0.1:6379/0 python -m benchmarks.peer_app --port 8123

`FASTMCP_DOCKET_URL` picks the backend (`memory://` by default, as fastmcp-tasks does). Needs the `peers` extra.
"""

from __future__ import annotations

import argparse
import os

import anyio
import mcp_types
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp_tasks import TasksExtension

app = FastMCP("peer-fastmcp-tasks")
app.add_extension(TasksExtension(url=os.environ.get("FASTMCP_DOCKET_URL", "memory://")))


@app.tool()
def greet(name: str) -> str:
    """A synchronous tool: the server's floor."""
    return f"Hello, {name}!"


@app.tool(task=True)
async def slow_compute(seconds: float = 1, label: str = "job") -> str:
    """Sleep `seconds`, as the conformance fixture does."""
    await anyio.sleep(seconds)
    return f"{label} done after {seconds}s"


@app.tool(task=True)
async def confirm_delete(filename: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask for a confirmation (fastmcp-tasks' guard pattern: return the question, read the answer on re-entry)."""
    answers = ctx.input_responses or {}
    answer = answers.get("confirm")
    if answer is None:
        question = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message=f"Delete {filename}?",
                requested_schema={
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"],
                },
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"confirm": question})
    return f"deleted {filename}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peer_app")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app.http_app(path="/mcp"), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
