"""`dev`, `serve`, `worker`, `codec-server` and `codec-key` on the command line; what they run is `server_commands`."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import click

from mcp_tasks_temporal.ops.cli import invocation
from mcp_tasks_temporal.ops.settings.model import Settings
from mcp_tasks_temporal.ops.settings.options import SettingsCommand, given_flags, load_settings
from mcp_tasks_temporal.ops.settings.processes import CodecServerSettings, DevSettings, ServeSettings, WorkerSettings

SERVER_EXIT_STATUSES = """\b
Exit status:
  0  stopped by Ctrl-C or SIGTERM
  2  did not start, or stopped on an error, with one line saying why: bad arguments, a bad --app,
     a port or state directory already in use (dev), Temporal unreachable, the embedded Temporal
     server exited (dev)"""


def _server_command(name: str, model: type[Settings], runner: str, description: str) -> SettingsCommand:
    @click.pass_context
    def callback(ctx: click.Context, **_: Any) -> Any:
        settings = load_settings(model, ctx.command_path, given_flags(ctx, model))

        def prepare() -> None:
            # Temporal, the MCP SDK, uvicorn and the app take seconds to import, which `--help` does not need;
            # done before the event loop, where Ctrl-C stops them at once.
            from mcp_tasks_temporal.ops.app_loading import load_app

            import_module("mcp_tasks_temporal.ops.server_commands")
            app = getattr(settings, "app", None)
            if isinstance(app, str):
                load_app(app)  # imported once: the command loads it again from the import cache

        async def job() -> None:
            from mcp_tasks_temporal.ops import server_commands

            await getattr(server_commands, runner)(settings)

        return invocation(ctx, "server", settings, job, prepare=prepare)

    return SettingsCommand(name, callback=callback, settings_model=model, help=description, epilog=SERVER_EXIT_STATUSES)


dev = _server_command(
    "dev",
    DevSettings,
    "dev",
    "An embedded Temporal dev server, a worker and the MCP endpoint, in one command.",
)
serve = _server_command("serve", ServeSettings, "serve", "The MCP front server only, against a Temporal cluster.")
worker = _server_command("worker", WorkerSettings, "worker", "A Temporal worker that runs the app's task tools.")
codec_server = _server_command(
    "codec-server",
    CodecServerSettings,
    "codec_server",
    "Decrypt payloads for the Temporal Web UI and CLI (their remote codec endpoint).",
)


@click.command("codec-key", help="Print a new random AES-256-GCM key for --codec-key-file.")
@click.pass_context
def codec_key(ctx: click.Context) -> Any:
    async def job() -> None:
        from mcp_tasks_temporal.temporal.codec import new_key

        print(new_key())

    return invocation(ctx, "server", None, job)
