"""`call`, `get`, `cancel`, `answer`, `watch`, `tasks` on the command line; what they run is `client_commands`.

    mcp-tasks-temporal call build --url http://127.0.0.1:8000/mcp --args '{"ref": "main"}'
    mcp-tasks-temporal call build --url ... --detach          # prints the task ID and returns
    mcp-tasks-temporal watch 6f1c...                           # the server comes from the journal
    mcp-tasks-temporal answer 6f1c... name '{"action": "accept", "content": {"name": "Ada"}}'
    mcp-tasks-temporal tasks --json

`--stdio 'COMMAND ARGS'` starts a stdio server instead of `--url`. Status and
prompts go to stderr, results to stdout (`--json` for scripts). Errors are one
line on stderr, with the JSON-RPC code when there is one, and an exit status
(`EXIT_STATUSES`, also shown by `--help`).
"""

from __future__ import annotations

from typing import Any

import click

from mcp_tasks_temporal.ops.cli import invocation
from mcp_tasks_temporal.ops.client_args import EXIT_STATUSES, ClientArgs
from mcp_tasks_temporal.ops.settings.options import SettingsCommand, given_flags, load_settings
from mcp_tasks_temporal.ops.settings.processes import ClientSettings

_SERVER = [
    click.Option(["--url"], metavar="URL", help="Streamable HTTP endpoint (for a task ID: default from the journal)"),
    click.Option(["--stdio"], metavar="COMMAND", help="start this stdio server instead (one shell-quoted string)"),
    click.Option(["--header"], multiple=True, metavar="NAME:VALUE", help="extra HTTP header (repeat)"),
    click.Option(["--no-push"], is_flag=True, help="poll tasks/get even if the server pushes"),
]
_JSON = click.Option(["--json"], is_flag=True, help="machine-readable output on stdout")
_ROOT = click.Option(["--root"], multiple=True, metavar="PATH", help="offer this folder to the tool as a root (repeat)")
_NO_INPUT = click.Option(
    ["--no-input"],
    is_flag=True,
    help="never ask the task's questions here: follow it while they are answered elsewhere (`answer`)",
)
_TASK_ID = click.Argument(["task_id"], metavar="ID")


def _client_command(name: str, runner: str, description: str, params: list[click.Parameter]) -> SettingsCommand:
    @click.pass_context
    def callback(ctx: click.Context, **values: Any) -> Any:
        settings = load_settings(ClientSettings, ctx.command_path, given_flags(ctx, ClientSettings))
        known = set(ClientArgs.__dataclass_fields__) - {"settings", "command"}
        mine = {key: value for key, value in values.items() if key in known}
        args = ClientArgs(settings=settings, command=name, **mine)

        async def job() -> int | None:
            # The MCP client takes seconds to import, which `--help` does not need.
            from mcp_tasks_temporal.ops import client_commands

            return await client_commands.guarded(getattr(client_commands, runner))(args)

        return invocation(ctx, "client", settings, job)

    return SettingsCommand(
        name,
        callback=callback,
        params=params,
        settings_model=ClientSettings,
        help=description,
        epilog=EXIT_STATUSES,
    )


call = _client_command(
    "call",
    "run_call",
    "Call a tool; wait for its task, answering its questions on the terminal.",
    [
        click.Argument(["tool"]),
        click.Option(["--args"], default="{}", metavar="JSON", help="tool arguments as a JSON object"),
        click.Option(["--detach"], is_flag=True, help="print the task ID and return at once"),
        _NO_INPUT,
        _ROOT,
        *_SERVER,
        _JSON,
    ],
)
get = _client_command("get", "run_get", "Show a task.", [_TASK_ID, *_SERVER, _JSON])
cancel = _client_command("cancel", "run_cancel", "Ask the server to cancel a task.", [_TASK_ID, *_SERVER, _JSON])
answer = _client_command(
    "answer",
    "run_answer",
    "Answer a task's input request.",
    [
        _TASK_ID,
        click.Argument(["key"]),
        click.Argument(["response"], metavar="VALUE|JSON"),
        *_SERVER,
        _JSON,
    ],
)
answer.help = (
    "Answer a task's input request. KEY is the key of an open input request, as `get` shows it; the answer is a "
    "plain value when the question has one field (yes, 42, some text; !decline, !cancel), "
    'else JSON, e.g. \'{"action": "accept", "content": {...}}\'.'
)
watch = _client_command(
    "watch", "run_watch", "Follow a task until it ends.", [_TASK_ID, _NO_INPUT, _ROOT, *_SERVER, _JSON]
)
tasks = _client_command(
    "tasks",
    "run_tasks",
    "The tasks the local journal is waiting for, with each one's status as its server says now.",
    [
        click.Option(["--all"], is_flag=True, help="also the finished tasks the journal still remembers"),
        _JSON,
    ],
)
