"""The mcp 1.x clients of the interop suite, in a venv of their own: tests/interop/mcp1/.venv.

mcp 1.x and langchain-mcp-adapters (which requires mcp<2) cannot be installed beside the
mcp 2.x the project runs on, so the suite makes a second venv from the requirements pinned
in tests/interop/mcp1/requirements.txt, once per checkout (again only when they change), and
runs tests/interop/mcp1/drive.py there as a subprocess that prints one JSON line.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MCP1_DIR = Path(__file__).resolve().parent / "mcp1"
VENV = MCP1_DIR / ".venv"
REQUIREMENTS = MCP1_DIR / "requirements.txt"
INSTALLED = VENV / "installed-requirements.txt"
"""A copy of the requirements the venv was installed from: a changed pin installs again."""
INSTALL_TIMEOUT_S = 900
RUN_TIMEOUT_S = 120
"""A backstop only: every wait inside drive.py is bounded at 30 s."""


@dataclass(frozen=True)
class Mcp1Clients:
    python: Path

    def run(self, client: str, action: str, url: str, **arguments: Any) -> dict[str, Any]:
        """drive.py's report; the script's output when it printed none."""
        done = subprocess.run(
            [str(self.python), str(MCP1_DIR / "drive.py"), client, action, url, json.dumps(arguments)],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        assert done.returncode == 0 and lines, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-4000:]}"
        report: dict[str, Any] = json.loads(lines[-1])
        return report


def _installed() -> bool:
    return INSTALLED.exists() and INSTALLED.read_text() == REQUIREMENTS.read_text()


def mcp1_clients() -> Mcp1Clients:
    """The venv, made and installed first if it is missing or stale; parallel workers wait for the one installing."""
    python = VENV / "bin" / "python"
    with open(MCP1_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, timeout=INSTALL_TIMEOUT_S)
            subprocess.run(
                [str(python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)],
                check=True,
                timeout=INSTALL_TIMEOUT_S,
            )
            INSTALLED.write_text(REQUIREMENTS.read_text())
    return Mcp1Clients(python)
