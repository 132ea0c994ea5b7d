"""The `mcp-tasks-temporal` command.

Servers: `dev` (all in one), `serve` (the MCP front), `worker`, `codec-server`, `codec-key`.
Task client: `call`, `get`, `answer`, `cancel`, `watch`, `tasks`. Operators: `audit`, `admin`.

One click group; each command is defined in `server_cli`, `client_cli` or `operator_cli`
and imported when it is named, so `--help` and a mistyped command stay instant. A command's
callback only validates its settings and returns an `Invocation`; `run` carries it out, so
tests can parse a command line without running it. Click rather than Typer: the options are
generated from the settings models' fields (`ops.settings.options`), so a flag and its
variable are declared once, where Typer would declare every option again in a signature.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal, NoReturn, cast

import click

if TYPE_CHECKING:
    from mcp_tasks_temporal.ops.settings.model import Settings

PROG = "mcp-tasks-temporal"

Role = Literal["server", "client", "operator"]

EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""Output went to a pipe whose reader is gone (`| head`); `main` then ends killed by SIGPIPE, as a C tool does."""
EXIT_TEMPORAL_UNREACHABLE = 6
"""The client and operator commands' status for a Temporal they cannot reach; the servers say 2, as for any failed
start."""

_COMMANDS: dict[str, tuple[str, str]] = {
    "dev": ("server_cli:dev", "embedded Temporal dev server + worker + HTTP front, in one command"),
    "serve": ("server_cli:serve", "the MCP front server only, against a Temporal cluster"),
    "worker": ("server_cli:worker", "a Temporal worker that runs the app's task tools"),
    "codec-server": (
        "server_cli:codec_server",
        "decrypt payloads for the Temporal Web UI and CLI (their remote codec endpoint)",
    ),
    "codec-key": ("server_cli:codec_key", "print a new random AES-256-GCM key for --codec-key-file"),
    "call": ("client_cli:call", "call a tool; wait for its task"),
    "get": ("client_cli:get", "show a task"),
    "cancel": ("client_cli:cancel", "ask the server to cancel a task"),
    "answer": ("client_cli:answer", "answer a task's input request"),
    "watch": ("client_cli:watch", "follow a task until it ends"),
    "tasks": ("client_cli:tasks", "the tasks the local journal is waiting for"),
    "audit": ("operator_cli:audit", "a task's whole story from its Temporal history (operators)"),
    "admin": ("operator_cli:admin", "list or cancel tasks from Temporal visibility (operators)"),
}


_SERVERS = frozenset({"dev", "serve", "worker", "codec-server"})


def _named_command(args: Sequence[str]) -> str | None:
    """The command a command line names, without parsing it (the options before it take one value each)."""
    words = iter(args)
    for word in words:
        if not word.startswith("-"):
            return word
        if "=" not in word:
            next(words, None)
    return None


@dataclass(frozen=True)
class Invocation:
    """A parsed and validated command line, ready to run.

    Attributes:
        command: The command's words (`serve`, `admin cancel`).
        role: Servers stop on Ctrl-C with 0 and fail to start with 2; clients and operators take Ctrl-C as 130
            and an unreachable Temporal as 6.
        settings: The command's validated settings.
        job: What the command does; its exit status (`None` for 0).
        log_level: The level of the process's logging.
        one_shot: A short-lived Temporal client: the process skips interpreter teardown (`main`).
        prepare: Imports and loading done before the event loop starts, where Ctrl-C interrupts them at
            once: inside the loop it only cancels the command once the blocking import is done (the demo
            app takes seconds to import on a busy machine).
    """

    command: str
    role: Role
    settings: Settings | None
    job: Callable[[], Awaitable[int | None]]
    log_level: str = "WARNING"
    one_shot: bool = False
    prepare: Callable[[], object] | None = None


class _LazyGroup(click.Group):
    """Commands imported when named; the list in `--help` comes from a table, without importing any."""

    def __init__(self, *args: Any, table: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.table = table

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.table)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.table.get(cmd_name)
        if entry is None:
            return None
        module, _, attr = entry[0].partition(":")
        return cast("click.Command", getattr(import_module(f"mcp_tasks_temporal.ops.{module}"), attr))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in self.table.items()])


def _root_callback(ctx: click.Context, **_: Any) -> None:
    # Pydantic is imported here, once a command runs: `--help` of the whole script does without it.
    from mcp_tasks_temporal.ops.settings.options import given_flags, load_settings
    from mcp_tasks_temporal.ops.settings.processes import GlobalSettings

    ctx.obj = load_settings(GlobalSettings, ctx.command_path, given_flags(ctx, GlobalSettings))


root = _LazyGroup(
    name=PROG,
    table=_COMMANDS,
    help=__doc__.split("\n\n")[1] if __doc__ else None,
    epilog=f"`{PROG} COMMAND --help` shows each command's options and exit statuses.",
    callback=click.pass_context(_root_callback),
    params=[
        # As `GlobalSettings.log_level` declares it (tests/test_cli_startup.py keeps the two alike).
        click.Option(
            ["--log-level", "log_level"],
            metavar="LEVEL",
            help="DEBUG, INFO, WARNING or ERROR ($MCP_TASKS_LOG_LEVEL)",
        )
    ],
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
)


def invocation(
    ctx: click.Context,
    role: Role,
    settings: Settings | None,
    job: Callable[[], Awaitable[int | None]],
    *,
    one_shot: bool = False,
    prepare: Callable[[], object] | None = None,
) -> Invocation:
    """What a command's callback returns: its job, with the root options."""
    root_settings = ctx.find_root().obj
    log_level = str(getattr(root_settings, "log_level", "WARNING"))
    command = ctx.command_path.removeprefix(f"{PROG} ")
    return Invocation(command, role, settings, job, log_level, one_shot, prepare)


def parse(argv: Sequence[str] | None = None) -> Invocation | int:
    """The command line as an `Invocation`, or the exit status of `--help` or a usage error (already printed)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = root.main(args, prog_name=PROG, standalone_mode=False)
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except click.Abort:
        return 130
    if isinstance(result, Invocation):
        return result
    return result if isinstance(result, int) else 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _main(args)
    except KeyboardInterrupt:
        # Ctrl-C before the command started, or between the steps that catch it themselves (a signal lands
        # between any two bytecodes): nothing is left to stop, and a server's stop is a success. Skip the
        # interpreter's teardown, as a one-shot command does, for Temporal's bridge may be loaded by now.
        with contextlib.suppress(OSError):
            _flush()
        os._exit(0 if _named_command(args) in _SERVERS else 130)


def _main(args: list[str]) -> None:
    try:
        parsed = parse(args)
    except BrokenPipeError:  # `--help | head`
        _end_with_sigpipe()
    if isinstance(parsed, int):
        raise SystemExit(parsed)
    status, one_shot = execute(parsed)
    if status == EXIT_BROKEN_PIPE:
        _end_with_sigpipe()
    if one_shot:
        # A short-lived process that used a Temporal client can abort in interpreter teardown (the SDK's
        # Rust threads take the GIL while it is finalizing, temporalio/sdk-python#300; a failed connect
        # can leave one calling back into Python): everything is done and flushed, so skip the teardown.
        _flush()
        os._exit(status)
    if status:
        raise SystemExit(status)


def run(argv: Sequence[str] | None = None) -> int:
    """Parse and run a command line to its end; its exit status (the process is left to the caller)."""
    parsed = parse(argv)
    return parsed if isinstance(parsed, int) else execute(parsed)[0]


def execute(invocation: Invocation) -> tuple[int, bool]:
    """Run a parsed command line; its exit status, and whether the process should skip interpreter teardown."""
    interrupted = 0 if invocation.role == "server" else 130
    try:
        with _ctrl_c_held():
            import anyio

            from mcp_tasks_temporal.temporal.connection import TemporalConnectionError
            from mcp_tasks_temporal.temporal.tracing import shutdown_tracing
    except KeyboardInterrupt:
        return interrupted, False

    logging.basicConfig(level=invocation.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    one_shot = invocation.one_shot
    status = 0
    try:
        try:
            try:
                if invocation.prepare is not None:
                    invocation.prepare()
                status = anyio.run(invocation.job) or 0
            except BaseExceptionGroup as group:
                # A task group (the push hub's, the app's lifespan) wraps what stopped the command; one
                # cause is reported as itself, on one line, like any other.
                raise single_cause(group) from None
        except KeyboardInterrupt:
            # Ctrl-C is how `dev`, `serve` and `worker` stop; for other commands it cut the wait short.
            # Everything is stopped and flushed: a Temporal call it cut short could still call back into
            # Python during interpreter teardown, so skip it (`main`).
            return interrupted, True
        except BrokenPipeError:
            return EXIT_BROKEN_PIPE, one_shot
        except TemporalConnectionError as err:
            _say(str(err))
            return (2 if invocation.role == "server" else EXIT_TEMPORAL_UNREACHABLE), True
        except (ValueError, RuntimeError) as err:
            # A refused start (a namespace without the search attributes, settings another process does not
            # share) may come right after connecting: skip the teardown as well (`main` says why).
            _say(str(err))
            return 2, True
        finally:
            shutdown_tracing()
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0, one_shot
        _say(str(exit_.code))
        return 1, one_shot
    try:
        _flush()
    except BrokenPipeError:
        return EXIT_BROKEN_PIPE, one_shot
    return status, one_shot


@contextlib.contextmanager
def _ctrl_c_held() -> Generator[None]:
    """Hold Ctrl-C while Temporal's bridge (a Rust extension) is imported, and take it right after.

    A SIGINT that lands inside the extension's initialisation is caught as a KeyboardInterrupt, yet the
    interpreter still ends killed by SIGINT, silently, after the command has handled it (4 `dev` starts in 10
    interrupted there, under load). Held, it arrives once the import is done, as an ordinary KeyboardInterrupt.
    """
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks, and no SIGINT from a terminal
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def _end_with_sigpipe() -> NoReturn:
    """Output went to a pipe whose reader is gone (`| head`): end as a C tool does, quietly, killed by SIGPIPE.

    stdout is pointed at /dev/null first, so nothing left in its buffer can fail with a
    traceback on the way out. The shell sees status 141, which `set -o pipefail` scripts expect.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    os._exit(EXIT_BROKEN_PIPE)  # not reached: the signal ends the process


def single_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception at the bottom of nested single-member groups, or the group itself."""
    cause: BaseException = group
    while True:
        members = cast("tuple[BaseException, ...] | None", getattr(cause, "exceptions", None))
        if members is None or len(members) != 1:
            return cause
        cause = members[0]
