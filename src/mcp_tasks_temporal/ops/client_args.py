"""What a client command line asks for, and the exit statuses it ends with: shared by `client_cli`, which
parses it, and `client_commands`, which runs it."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_tasks_temporal.ops.settings.processes import ClientSettings

EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_PROTOCOL = 3
EXIT_CANCELLED = 4
EXIT_AUTH = 5
EXIT_UNREACHABLE = 6
EXIT_INPUT_REQUIRED = 7
EXIT_UNEXPECTED = 70
EXIT_INTERRUPTED = 130

EXIT_STATUSES = """\b
Exit status:
  0   done (for call/watch: the task completed)
  1   the tool reported an error (its result has isError: true)
  2   usage: bad arguments, an unknown task ID (pass --url), a key not open or a bad answer, a cancel of an ended task
  3   a JSON-RPC error: unknown or expired task, the task failed (-32603, ...), a request the server refused
  4   the task was cancelled
  5   authentication failed (HTTP 401/403): check --token or $MCP_TASKS_TOKEN
  6   the server is unreachable
  7   call/watch: the task asked a question and there is no terminal to ask it on (stdin is not one, or
      ended): the task keeps waiting; answer it with `answer ID KEY VALUE`, then `watch ID`
  70  an unexpected error in this client (--log-level DEBUG shows the traceback)
  130 interrupted (Ctrl-C); the task keeps running and `watch ID` resumes it"""


@dataclass(frozen=True)
class ClientArgs:
    """One client command line: its settings, and what this run asks for (each command reads its own)."""

    settings: ClientSettings
    command: str
    json: bool = False
    url: str | None = None
    stdio: str | None = None
    header: tuple[str, ...] = ()
    no_push: bool = False
    tool: str = ""
    args: str = "{}"
    detach: bool = False
    root: tuple[str, ...] = ()
    no_input: bool = False
    task_id: str = ""
    key: str = ""
    response: str = ""
    all: bool = False
