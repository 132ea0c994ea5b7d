"""Which tests start a process, or talk to a server in another process, other than Temporal: counted, not guessed.

For each test (its setup, call and teardown, so a fixture counts for the test that first needs it) this
plugin records:

- each process started from the test process: `subprocess.Popen` (and with it `subprocess.run`, asyncio's
  and anyio's subprocesses), `os.fork`, `os.posix_spawn` and `multiprocessing`;
- each connection from the test process to a server in another process: a TCP connection to a loopback
  port no socket of the test process listens on, or to another host, a Unix socket connection to a
  listener the test process does not hold, and a read or write on the pipes of a child it started (stdio),
  whichever test started the child.

Temporal is not counted: every test may use the session's server. A command that runs the `temporal` CLI
is Temporal, and so is a connection to a port such a command was given (`--port`), or to one
`register_temporal_port` names (a server the SDK started).

The terminal summary gives the count and the share; `--process-audit=list` also names each test with what
it started or reached, `--process-audit-json=PATH` writes it all, and `--process-audit=off` patches nothing.
Under pytest-xdist each worker records its own tests and the summary adds them up.
"""

from __future__ import annotations

import inspect
import json
import multiprocessing.process
import os
import socket
import subprocess
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

_PROPERTY = "process_audit"
_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "::"}
_TEMPORAL_CLI = "temporal"


@dataclass
class _Record:
    started: set[str] = field(default_factory=set[str])
    talked: set[str] = field(default_factory=set[str])
    ports: dict[int, bool] = field(default_factory=dict[int, bool])
    """Per loopback port reached: whether its listener is in another process (looked up once per test)."""

    def as_json(self) -> dict[str, list[str]]:
        return {"started": sorted(self.started), "talked": sorted(self.talked)}


@dataclass
class _Results:
    """What the summary counts: the tests that ran, and what each started or reached."""

    ran: set[str] = field(default_factory=set[str])
    skipped: set[str] = field(default_factory=set[str])
    per_test: dict[str, dict[str, list[str]]] = field(default_factory=dict[str, dict[str, list[str]]])


_RESULTS = pytest.StashKey[_Results]()
_results: _Results | None = None
"""The session's (here, or on the xdist controller from its workers' reports); `None` with the audit off."""


_current: _Record | None = None
_outside = _Record()
"""What happened outside any test (collection, session fixtures' teardown)."""
_temporal_ports: set[int] = set()


def register_temporal_port(port: int) -> None:
    """Connections to `port` are to Temporal: a server this process did not start through a command."""
    _temporal_ports.add(port)


def _record() -> _Record:
    return _current if _current is not None else _outside


# -- processes ---------------------------------------------------------------------------------------------


def _argv(args: Any) -> list[str]:
    if isinstance(args, str | bytes | os.PathLike):
        return [os.fsdecode(args)]  # pyright: ignore[reportUnknownArgumentType]
    return [os.fsdecode(arg) for arg in args]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


def _temporal_ports_of(argv: list[str]) -> set[int] | None:
    """The ports of a command that runs the `temporal` CLI (its servers' `--port`); `None` if it runs something else."""
    at = next((i for i, arg in enumerate(argv) if Path(arg).name == _TEMPORAL_CLI), None)
    if at is None:
        return None
    rest = argv[at:]
    return {int(rest[i + 1]) for i, arg in enumerate(rest[:-1]) if arg == "--port" and rest[i + 1].isdigit()}


def _shown(argv: list[str]) -> str:
    shown = " ".join(argv)
    return shown if len(shown) <= 160 else shown[:159] + "…"


def _started(argv: list[str]) -> None:
    ports = _temporal_ports_of(argv)
    if ports is not None:
        _temporal_ports.update(ports)
        return
    _record().started.add(_shown(argv))


def _wrap(owner: Any, name: str, describe: Callable[..., list[str]]) -> None:
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _started(describe(*args, **kwargs))
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


_child_pipes: dict[int, tuple[int, str]] = {}
"""The test process's ends of its children's stdio pipes: fd -> (inode, command), so a reused fd number is not taken
for the pipe it once was."""
_POPEN_CHILD = inspect.signature(subprocess.Popen._execute_child)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]


def _execute_child(original: Callable[..., Any]) -> Callable[..., Any]:
    """Record each Popen's command, and its stdio pipes once they are the child's."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = _POPEN_CHILD.bind(*args, **kwargs).arguments
        argv = _argv(bound["args"])
        _started(argv)
        result = original(*args, **kwargs)
        if _temporal_ports_of(argv) is None:
            for name in ("p2cwrite", "c2pread", "errread"):
                fd = bound[name]
                if isinstance(fd, int) and fd >= 0:
                    _child_pipes[fd] = (os.fstat(fd).st_ino, _shown(argv))
        return result

    return wrapper


def _through_pipe(original: Callable[..., Any]) -> Callable[..., Any]:
    """`os.read`/`os.write` (asyncio's and anyio's pipes use them), counted when on a child's stdio pipe."""

    def wrapper(fd: int, *args: Any) -> Any:
        child = _child_pipes.get(fd)
        if child is not None:
            try:
                same = os.fstat(fd).st_ino == child[0]
            except OSError:
                same = False
            if same:
                _record().talked.add(f"stdio: {child[1]}")
            else:
                _child_pipes.pop(fd, None)
        return original(fd, *args)

    return wrapper


def _install_process_hooks() -> None:
    # Every Popen, and so subprocess.run, asyncio's and anyio's subprocesses, execs through here.
    subprocess.Popen._execute_child = _execute_child(subprocess.Popen._execute_child)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
    os.read = _through_pipe(os.read)
    os.write = _through_pipe(os.write)
    _wrap(os, "fork", lambda: ["os.fork()"])
    _wrap(os, "posix_spawn", lambda path, argv, *rest, **kw: _argv(argv))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    _wrap(os, "posix_spawnp", lambda path, argv, *rest, **kw: _argv(argv))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    _wrap(
        multiprocessing.process.BaseProcess,
        "start",
        lambda self: [f"multiprocessing {getattr(self, 'name', '?')}"],  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    )


# -- connections -------------------------------------------------------------------------------------------


def _own_socket_inodes() -> set[int]:
    inodes: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def _listening_inodes_tcp(port: int) -> set[int]:
    found: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                found.add(int(fields[9]))
    return found


def _listening_inodes_unix(path: str) -> set[int]:
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {int(fields[6]) for line in lines if len(fields := line.split()) >= 8 and fields[7] == path}


def _in_other_process(listeners: set[int]) -> bool:
    """Whether the listener is in another process: none of its sockets is ours (unknown, off Linux: assume so)."""
    return not (listeners and listeners & _own_socket_inodes())


def _connected(sock: socket.socket, address: Any) -> None:
    record = _record()
    if sock.family == socket.AF_UNIX:
        path = os.fsdecode(address) if isinstance(address, str | bytes) else str(address)
        if path and not path.startswith("\0") and _in_other_process(_listening_inodes_unix(path)):
            record.talked.add(f"unix:{path}")
        return
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return
    host, port = str(address[0]), int(address[1])  # pyright: ignore[reportUnknownArgumentType]
    if port in _temporal_ports:
        return
    if host not in _LOOPBACK:
        record.talked.add(f"{host}:{port}")
        return
    if port not in record.ports:
        record.ports[port] = _in_other_process(_listening_inodes_tcp(port))
    if record.ports[port]:
        record.talked.add(f"{host}:{port}")


def _install_connection_hooks() -> None:
    for name in ("connect", "connect_ex"):
        original = getattr(socket.socket, name)

        def wrapper(self: socket.socket, address: Any, _original: Any = original) -> Any:
            try:
                _connected(self, address)
            except Exception:  # the audit must never break a connection
                pass
            return _original(self, address)

        setattr(socket.socket, name, wrapper)


# -- pytest ------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("process audit")
    group.addoption(
        "--process-audit",
        choices=["summary", "list", "off"],
        default="summary",
        help="count the tests that start or talk to a process other than Temporal (summary, the default); "
        "list: and name each with what it started or reached; off: patch nothing",
    )
    group.addoption("--process-audit-json", default=None, metavar="PATH", help="write the audit per test to PATH")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("process_audit") == "off":
        return
    global _results
    _install_process_hooks()
    _install_connection_hooks()
    _results = config.stash[_RESULTS] = _Results()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    global _current
    _current = _Record()
    try:
        yield
    finally:
        _current = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any]:
    outcome = yield
    if call.when != "teardown" or _current is None:
        return
    report: pytest.TestReport = outcome.get_result()
    report.user_properties = [*report.user_properties, (_PROPERTY, json.dumps(_current.as_json()))]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    results = _results
    if results is None:
        return
    if report.when == "setup" and report.skipped:
        results.skipped.add(report.nodeid)
    if report.when != "teardown":
        return
    results.ran.add(report.nodeid)
    for name, value in report.user_properties:
        if name == _PROPERTY:
            results.per_test[report.nodeid] = json.loads(str(value))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    results = config.stash.get(_RESULTS, None)
    if results is None or hasattr(config, "workerinput"):
        return
    ran = sorted(results.ran - results.skipped)
    audited = {nodeid: results.per_test.get(nodeid, {"started": [], "talked": []}) for nodeid in ran}
    started = [nodeid for nodeid, seen in audited.items() if seen["started"]]
    talked = [nodeid for nodeid, seen in audited.items() if seen["talked"]]
    either = [nodeid for nodeid, seen in audited.items() if seen["started"] or seen["talked"]]
    write: Callable[..., None] = terminalreporter.write_line
    terminalreporter.section("process audit")
    share = f"{len(either) / len(ran):.1%}" if ran else "-"
    write(
        f"{len(either)} of {len(ran)} tests ({share}) start a process or talk to one other than Temporal: "
        f"{len(started)} start one, {len(talked)} talk to one"
    )
    if config.getoption("process_audit") == "list":
        for nodeid in either:
            seen = audited[nodeid]
            write(f"{nodeid}")
            for what in seen["started"]:
                write(f"    started  {what}")
            for what in seen["talked"]:
                write(f"    talked   {what}")
        if _outside.started or _outside.talked:  # this process's only: xdist workers keep theirs
            write(f"outside any test: started {sorted(_outside.started)}, talked {sorted(_outside.talked)}")
    path = config.getoption("process_audit_json")
    if path:
        Path(path).write_text(json.dumps({"tests": len(ran), "per_test": audited}, indent=1) + "\n")
