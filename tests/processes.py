"""Real processes for the tests: a Temporal dev server, front servers and workers."""

from __future__ import annotations

import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import anyio
import httpx

from mcp_tasks_temporal.ops.dev.embedded_temporal import dev_server_command, temporal_cli
from tests.wire import base_headers, request_message

REPO_ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "mcp_tasks_temporal"]
FIXTURE_APP = "tests.fixture_app:app"
# A start is a few seconds on an idle machine; with both cores busy (pytest-xdist, other work) a Python
# child's imports alone can take ten times that, and a missed start fails every test sharing the stack.
START_TIMEOUT_S = 60


_PORTS_FROM, _PORTS_TO = 20_000, 32_000
"""Below Linux's ephemeral range (32768-60999), where a port asked of the kernel is also one that any
outgoing connection may take before the child that was handed it binds it."""
_handed_out: set[int] = set()


def free_port() -> int:
    """A port free now and never handed out before by this process; each xdist worker draws from its own range."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    slices = 8
    width = (_PORTS_TO - _PORTS_FROM) // slices
    start = _PORTS_FROM + (int(worker) % slices if worker.isdigit() else 0) * width
    for _ in range(200):
        port = random.randrange(start, start + width)
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port in {start}-{start + width}")


def child_env() -> dict[str, str]:
    """The environment of a child process: this checkout importable, output unbuffered."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    # Bytecode is cached: a child that may not write it compiles the project's sources again at every start, and
    # each sandboxed workflow run compiles its workflow modules again (the sandbox re-imports them per run).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # Every Temporal dev server the tests start (their own, or `dev`'s) lives for minutes and allocates fast:
    # collecting its Go heap only near 1 GiB, not each time the heap doubles, takes a quarter to a third off its
    # CPU (the feed durability test's server: 125 to 84-96 CPU-seconds), which the two cores give to the tests.
    env.setdefault("GOGC", "off")
    env.setdefault("GOMEMLIMIT", "1GiB")
    # The suite's fronts with --tokens or --jwt-jwks keep unkeyed owner keys, as its tests of them expect;
    # `serve` refuses that without this (tests/test_secure_defaults.py takes it away to see the refusal).
    env.setdefault("MCP_TASKS_ALLOW_UNKEYED_OWNER_KEYS", "1")
    return env


@cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, built once per process: httpx builds one for every client it opens, loading
    the CA certificates again (15 ms of CPU, more under load), and the tests open clients by the thousand."""
    return httpx.create_ssl_context()


def wait_until(predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll a condition with a hard bound; used only for process start-up, never for task state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


@dataclass
class Process:
    """A child process whose output goes to a log file shown when a test fails."""

    name: str
    command: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    """Added to the test's own environment."""
    output_path: Path | None = None
    """Where stdout goes instead of the log, for a child whose output is its answer."""
    popen: subprocess.Popen[bytes] = field(init=False)

    def start(self) -> Process:
        env = {**child_env(), **(self.env or {})}
        with self.log_path.open("ab") as log, (self.output_path or self.log_path).open("ab") as output:
            self.popen = subprocess.Popen(
                self.command, cwd=REPO_ROOT, env=env, stdout=output, stderr=log, start_new_session=True
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        if not self.alive:
            return
        os.killpg(self.popen.pid, sig)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout)

    def kill(self) -> None:
        """SIGKILL, the crash a process never sees coming."""
        self.stop(signal.SIGKILL)

    async def exited(self, timeout: float) -> int:
        """Its exit code once it has exited (`subprocess.TimeoutExpired` after `timeout`): the wait is on the
        process itself, so no pipe a grandchild still holds can hold it."""
        return await anyio.to_thread.run_sync(self.popen.wait, timeout)


def stop_all(processes: Iterable[Process], timeout: float) -> None:
    """SIGTERM to every one at once, then SIGKILL to any still running after `timeout`: a teardown waits out
    the slowest shutdown once, not each in turn."""
    running = [process for process in processes if process.alive]
    for process in running:
        os.killpg(process.popen.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for process in running:
        try:
            process.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()


def start_temporal(
    workdir: Path,
    *,
    db_path: Path | None = None,
    port: int | None = None,
    search_attributes: bool = True,
    dynamic_config: Iterable[str] = (),
) -> tuple[Process, str]:
    """A Temporal dev server as `dev` runs it; `dynamic_config` adds `KEY=VALUE` settings to its own."""
    port = port or free_port()
    command = dev_server_command(
        host="127.0.0.1",
        port=port,
        ui_port=None,
        db_path=db_path,
        namespaces=["default"],
        search_attributes=search_attributes,
    )
    for setting in dynamic_config:
        command += ["--dynamic-config-value", setting]
    process = Process("temporal", command, workdir / f"temporal-{port}.log").start()
    address = f"127.0.0.1:{port}"

    def ready() -> bool:
        if not process.alive:
            raise RuntimeError(f"temporal dev server exited:\n{process.log()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) != 0:
                return False
        # An open port comes before a healthy frontend: a client connecting then is refused
        # ("Frontend is not healthy yet"); the CLI's own health check waits for the real thing.
        health = [temporal_cli(), "operator", "cluster", "health", "--address", address]
        return subprocess.run(health, capture_output=True, timeout=10).returncode == 0

    wait_until(ready, timeout=START_TIMEOUT_S, what="the Temporal dev server")
    return process, address


def start_worker(
    workdir: Path,
    temporal: str | None,
    task_queue: str,
    *,
    app: str = FIXTURE_APP,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Process:
    """A worker; with `temporal=None` it finds Temporal through the TEMPORAL_* variables alone."""
    name = f"worker-{free_port()}"
    address = ["--temporal", temporal] if temporal else []
    command = [*CLI, "worker", *address, "--task-queue", task_queue, "--app", app, *(extra or [])]
    process = Process(name, command, workdir / f"{name}.log", env).start()

    def ready() -> bool:
        if not process.alive:
            raise RuntimeError(f"worker exited:\n{process.log()}")
        return "mcp-tasks-temporal worker:" in process.log()

    try:
        wait_until(ready, timeout=START_TIMEOUT_S, what="the worker")
    except BaseException:
        process.kill()
        raise
    return process


def start_front(
    workdir: Path,
    temporal: str | None,
    task_queue: str,
    *,
    app: str = FIXTURE_APP,
    port: int | None = None,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[Process, str]:
    """A front server; with `temporal=None` it finds Temporal through the TEMPORAL_* variables alone."""
    port = port or free_port()
    command = [
        *CLI,
        "serve",
        *(["--temporal", temporal] if temporal else []),
        "--task-queue",
        task_queue,
        "--app",
        app,
        "--port",
        str(port),
        *(extra or []),
    ]
    process = Process(f"front-{port}", command, workdir / f"front-{port}.log", env).start()
    url = f"http://127.0.0.1:{port}/mcp"

    def ready(probe: httpx.Client) -> bool:
        if not process.alive:
            raise RuntimeError(f"front server exited:\n{process.log()}")
        # While the front imports, its port is closed: a connect tells that for less than a request.
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) != 0:
                return False
        try:
            response = probe.post(
                url, json=request_message(0, "server/discover", None), headers=base_headers("server/discover")
            )
        except httpx.TransportError:
            return False
        return response.status_code in (200, 401)  # 401: up, and asking for a bearer token

    try:
        with httpx.Client(timeout=2, verify=tls_context()) as probe:
            wait_until(lambda: ready(probe), timeout=START_TIMEOUT_S, what="the front server")
    except BaseException:
        process.kill()
        raise
    return process, url
