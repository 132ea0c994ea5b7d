"""Whether a folder's node_modules holds what its package-lock.json pins, and installing it once."""

from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path
from typing import Any


def installed_as_locked(folder: Path) -> bool:
    """npm's own record of the install (`node_modules/.package-lock.json`) against the lock.

    Optional packages for other platforms (another CPU, musl, macOS) are in the lock but never
    installed here, so only the ones npm did install, and every non-optional one, must match.
    """
    record = folder / "node_modules" / ".package-lock.json"
    if not record.exists():
        return False
    wanted: dict[str, Any] = json.loads((folder / "package-lock.json").read_text())["packages"]
    wanted.pop("", None)
    have: dict[str, Any] = json.loads(record.read_text())["packages"]
    if any(wanted.get(name) != entry for name, entry in have.items()):
        return False
    return all(name in have for name, entry in wanted.items() if not entry.get("optional"))


def npm_ci_once(npm: str, folder: Path, *extra: str, timeout: float) -> None:
    """`npm ci` in `folder` unless it is already installed; parallel test workers wait for the one installing."""
    with open(folder / ".npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed_as_locked(folder):
            subprocess.run([npm, "ci", "--no-audit", "--no-fund", *extra], cwd=folder, check=True, timeout=timeout)
