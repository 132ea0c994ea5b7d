"""mcp-agent's venv for the peer comparison: made on first use under the user's cache folder.

mcp-agent needs mcp<2, which cannot be installed beside the mcp 2.x the project runs on, so it gets a
venv of its own, from `benchmarks/mcp_agent_peer/requirements.txt`, in
`$XDG_CACHE_HOME/mcp-tasks-temporal/mcp-agent-venv` (`~/.cache/...` by default): outside the checkout, so
every worktree and CI run on the machine shares the one install (about 480 MB, 1-2 minutes), made again
only when the requirements change. Parallel users wait for the one installing.

    .venv/bin/python -m benchmarks.mcp_agent_venv      # install now (the peer benchmark does it when needed)
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

PEER_DIR: Final = Path(__file__).resolve().parent / "mcp_agent_peer"
REQUIREMENTS: Final = PEER_DIR / "requirements.txt"
APP: Final = PEER_DIR / "app.py"
INSTALL_TIMEOUT_S: Final = 900
TEMPORAL_ENV: Final = "MCP_AGENT_BENCH_TEMPORAL"
"""The dev server the peer's processes connect to (read by `mcp_agent_peer/app.py`)."""
TASK_QUEUE_ENV: Final = "MCP_AGENT_BENCH_TASK_QUEUE"


def venv_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "mcp-tasks-temporal" / "mcp-agent-venv"


def python() -> Path:
    return venv_dir() / "bin" / "python"


def _marker() -> Path:
    """A copy of the requirements the venv was installed from: a changed pin installs again."""
    return venv_dir() / "installed-requirements.txt"


def installed() -> bool:
    marker = _marker()
    return python().exists() and marker.exists() and marker.read_text() == REQUIREMENTS.read_text()


def install() -> Path:
    """The venv's python, the venv made and installed first if it is missing or stale."""
    venv = venv_dir()
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / ".mcp-agent-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed():
            print(f"installing mcp-agent into {venv} (once; 1-2 minutes)", flush=True)
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=INSTALL_TIMEOUT_S)
            subprocess.run(
                [
                    str(python()),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                    str(REQUIREMENTS),
                ],
                check=True,
                timeout=INSTALL_TIMEOUT_S,
            )
            _marker().write_text(REQUIREMENTS.read_text())
    return python()


def usable(*, may_install: bool) -> tuple[Path | None, str]:
    """The venv's python, or None and why not: not installed (and not allowed to), or the install failed."""
    if installed():
        return python(), ""
    if not may_install:
        return None, f"its venv is not installed ({venv_dir()}): python -m benchmarks.mcp_agent_venv"
    try:
        return install(), ""
    except (OSError, subprocess.SubprocessError) as err:
        return None, f"installing its venv failed: {err}"


if __name__ == "__main__":
    print(install())
