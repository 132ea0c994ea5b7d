"""Client commands of the `mcp-tasks-temporal` script, run in this process or as a child.

A child costs two to three seconds of CPU importing the `mcp` SDK before it sends a byte, and the
client-command tests run dozens of commands. In this process the SDK is imported once, and the
command runs from the same `main()` as the console script, in a thread of its own with its own event
loop, stdin, stdout, stderr and environment, exactly as a child would see them. The tests that prove
the script itself (its entry point, stdio servers, a terminal-less child) still run it as a child.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from mcp_tasks_temporal.ops.cli import Invocation, parse, run
from mcp_tasks_temporal.temporal.ids import LEGACY_OWNERS_ENV, OWNER_SECRET_ENV
from tests.processes import CLI, REPO_ROOT, child_env

# Streams and the environment are process-wide: one in-process command at a time.
_ONE_AT_A_TIME = threading.Lock()


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def unkeyed_env() -> dict[str, str]:
    """A command's environment without an owner secret: it keys owners as an in-process front does by default
    (`FrontSettings.owner_keying`), whatever the test process's own environment holds."""
    return {name: value for name, value in child_env().items() if name not in (OWNER_SECRET_ENV, LEGACY_OWNERS_ENV)}


async def run_in_child(args: list[str], *, stdin: str, env: Mapping[str, str], timeout_s: float = 90) -> Run:
    with anyio.fail_after(timeout_s):
        done = await anyio.run_process([*CLI, *args], input=stdin.encode(), cwd=REPO_ROOT, env=dict(env), check=False)
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


async def run_in_process(args: list[str], *, stdin: str, env: Mapping[str, str], timeout_s: float = 90) -> Run:
    # abandon_on_cancel: a command past its bound fails the test instead of hanging it; its thread ends
    # with the test process.
    with anyio.fail_after(timeout_s):
        return await anyio.to_thread.run_sync(_run_main, args, stdin, env, abandon_on_cancel=True)


def _run_main(args: list[str], stdin: str, env: Mapping[str, str]) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with _ONE_AT_A_TIME, _environment(env), _streams(io.StringIO(stdin), out, err):
        code = run(args)
    return Run(code, out.getvalue(), err.getvalue())


def settings_of(argv: list[str]) -> Any:
    """The validated settings of a command line, as the command would run with them."""
    parsed = parse(argv)
    assert isinstance(parsed, Invocation), f"{argv} did not parse: exit {parsed}"
    return parsed.settings


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Generator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _streams(stdin: io.StringIO, stdout: io.StringIO, stderr: io.StringIO) -> Generator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def client_env(**extra: str) -> dict[str, str]:
    """A child's environment without the suite's own token, plus `extra`."""
    environment = {k: v for k, v in child_env().items() if k != "MCP_TASKS_TOKEN"}
    environment.update(extra)
    return environment
