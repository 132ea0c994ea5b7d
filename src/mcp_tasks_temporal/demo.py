"""The built-in example app served by `mcp-tasks-temporal dev` when no `--app` is given.

Ordinary `mcp` tools; two lines make them tasks. Each reports progress the way
any MCP tool does (`ctx.report_progress`) or with `set_status`, and both show as
the task's `statusMessage`.
"""

from __future__ import annotations

import hashlib

import anyio
from mcp.server.mcpserver import Context, MCPServer

from mcp_tasks_temporal.extension import TasksExtension
from mcp_tasks_temporal.progress import set_status

tasks = TasksExtension()
app = MCPServer(
    "mcp-tasks-temporal-demo",
    version="0.1.0",
    instructions="Long-running tools that run as durable tasks on Temporal.",
    extensions=[tasks],
)

_PIPELINE = ("checkout", "resolve dependencies", "compile", "unit tests", "package", "publish")

_CORPUS = {
    "build.log": "compiling module core\nwarning: unused import\nlinking binary\nbuild succeeded",
    "deploy.log": "pushing image registry/app:1.4\nrollout started\nreplica 3/3 ready",
    "audit.log": "user alice approved release 1.4\nuser bob rolled back release 1.3",
}


@tasks.tool(policy="optional")
@app.tool()
async def build_pipeline(ref: str = "main", step_seconds: float = 2.0, ctx: Context | None = None) -> str:
    """Run a multi-step build of `ref` (checkout, compile, test, package, publish), reporting each step."""
    for number, step in enumerate(_PIPELINE, start=1):
        if ctx is not None:
            await ctx.report_progress(number - 1, len(_PIPELINE), f"{step} ({ref})")
        await anyio.sleep(step_seconds)
    digest = hashlib.sha256(ref.encode()).hexdigest()[:12]
    return f"Built and published {ref} as artifact {digest} in {len(_PIPELINE)} steps"


@tasks.tool(policy="optional")
@app.tool()
async def search_logs(pattern: str, seconds_per_file: float = 1.5) -> list[str]:
    """Search every log file for lines containing `pattern`, slowly, as a real log search would."""
    matches: list[str] = []
    for index, (name, text) in enumerate(sorted(_CORPUS.items()), start=1):
        set_status(f"searching {name} ({index}/{len(_CORPUS)}), {len(matches)} matches so far")
        await anyio.sleep(seconds_per_file)
        matches.extend(f"{name}: {line}" for line in text.splitlines() if pattern.lower() in line.lower())
    return matches


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers (an ordinary synchronous tool, for comparison)."""
    return a + b
