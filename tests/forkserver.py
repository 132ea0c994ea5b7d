"""A warm parent for the suite's `python -m mcp_tasks_temporal ...` children (Linux only).

Most of a test's cost is the processes it starts, and most of a Python child's start is importing the
`mcp` SDK, its types and temporalio: about two seconds of CPU before it does anything, paid again by
every front, worker and `dev` a test starts. This server imports those libraries once, with no thread
started, and forks a child per request. The child is a real process in a session of its own, as
`subprocess.Popen(..., start_new_session=True)` makes it: its own environment, working directory, log
file and exit status; it runs the package's `__main__` exactly as `python -m` does, and imports the
project's own modules itself, after the fork, so nothing the tests vary is read before it.

    python -m tests.forkserver SOCKET_PATH      # prints "ready" once it accepts requests

Requests are one JSON line per connection: `{"op": "spawn", "args": [...], "env": {...}, "cwd": ...,
"log": ...}` answers `{"pid": N}`; `{"op": "poll", "pid": N}` answers `{"code": null | int}`, the
exit status as `Popen.returncode` gives it (negative: the signal that ended it).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Libraries only: the project's modules read settings and the environment at import time.
WARM_IMPORTS = (
    "anyio",
    "httpx",
    "pydantic",
    "mcp_types",
    "mcp",
    "mcp.server",
    "mcp.client",
    "mcp.server.streamable_http",
    "starlette.applications",
    "uvicorn",
    "temporalio.client",
    "temporalio.worker",
    "temporalio.contrib.pydantic",
    "temporalio.contrib.opentelemetry",
    # The demo's and the fixtures' sub-agents: pydantic-ai with its OpenAI model and Temporal integration is
    # the heaviest import a child makes (0.8 s of CPU, in two children out of five).
    "pydantic_ai",
    "pydantic_ai.models.openai",
    "pydantic_ai.providers.openai",
    "pydantic_ai.durable_exec.temporal",
)


# --- the server ----------------------------------------------------------------------------------


def serve(path: str) -> None:
    import importlib

    for name in WARM_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # A fork copies only the calling thread; a lock another thread held would stay held forever.
    if threading.active_count() != 1:
        raise SystemExit(f"forkserver: {threading.active_count()} threads after the imports; fork is unsafe")
    _die_with_parent()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    exits: dict[int, int] = {}
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        with connection:
            request = json.loads(_read_line(connection))
            if request["op"] == "spawn":
                answer: dict[str, Any] = {"pid": _spawn(request, listener, connection)}
            else:
                answer = {"code": _exit_code(request["pid"], exits)}
            connection.sendall(json.dumps(answer).encode() + b"\n")


def _spawn(request: Mapping[str, Any], *inherited: socket.socket) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        for sock in inherited:
            sock.close()
        os.setsid()
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import random

        random.seed()  # the parent's generator state is every child's otherwise
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _run_module(request["args"])
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _run_module(args: Sequence[str]) -> int:
    import runpy

    sys.argv = ["mcp_tasks_temporal", *args]
    try:
        runpy.run_module("mcp_tasks_temporal", run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1
    return 0


def _exit_code(pid: int, exits: dict[int, int]) -> int | None:
    if pid not in exits:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            return None
        exits[pid] = os.waitstatus_to_exitcode(status)
    return exits[pid]


def _read_line(connection: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _die_with_parent() -> None:
    """The test process that started us may be killed; we must not outlive it."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


# --- the tests' side ---------------------------------------------------------------------------------


class ForkServer:
    """A running fork server and the way to ask it for children."""

    def __init__(self, path: Path, process: subprocess.Popen[bytes], python_path: str | None) -> None:
        self.path = path
        self.process = process
        self.python_path = python_path
        """Children that need another import path than the server's are started the ordinary way."""

    @classmethod
    def start(cls, folder: Path, env: Mapping[str, str], *, timeout_s: float = 60) -> ForkServer:
        path = folder / "forkserver.sock"
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.forkserver", str(path)],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        stdout = process.stdout
        assert stdout is not None
        ready = threading.Event()

        def read_ready_line() -> None:
            if stdout.readline():
                ready.set()

        threading.Thread(target=read_ready_line, daemon=True).start()
        if not ready.wait(timeout_s):
            process.kill()
            raise TimeoutError(f"the fork server did not start within {timeout_s} s")
        return cls(path, process, env.get("PYTHONPATH"))

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def serves(self, env: Mapping[str, str]) -> bool:
        return self.process.poll() is None and env.get("PYTHONPATH") == self.python_path

    def spawn(self, args: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: Path) -> ForkedChild:
        request = {"op": "spawn", "args": list(args), "env": dict(env), "cwd": str(cwd), "log": str(log)}
        return ForkedChild(self, self._ask(request)["pid"], list(args))

    def exit_code(self, pid: int) -> int | None:
        return self._ask({"op": "poll", "pid": pid})["code"]

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(self.path))
            sock.sendall(json.dumps(request).encode() + b"\n")
            return json.loads(_read_line(sock))


class ForkedChild:
    """What the tests use of `subprocess.Popen`, for a child the fork server started."""

    def __init__(self, server: ForkServer, pid: int, args: list[str]) -> None:
        self.server = server
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if (code := self.poll()) is not None:
            return code
        # Not our child, so no waitpid here: a pidfd becomes readable when the process exits,
        # and the fork server, its parent, then has the status.
        try:
            pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:  # reaped since the poll above
            pidfd = None
        if pidfd is not None:
            try:
                if not select.select([pidfd], [], [], timeout)[0]:
                    raise subprocess.TimeoutExpired(self.args, timeout or 0)
            finally:
                os.close(pidfd)
        code = self.poll()
        assert code is not None, f"process {self.pid} exited but its parent has no status for it"
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    serve(sys.argv[1])
