"""One Temporal server per state directory: two on one SQLite file corrupt it.

The lock is an advisory `flock` on `dev.lock`, taken by `dev` and inherited by
the Temporal server it starts, so it is held exactly as long as anything can
write the database: the kernel releases it when the last holder ends, however
it ends. The file also records who holds it (`dev`'s pid and its server's), so
that a `dev` started after a crash can tell a live `dev` (refuse) from a server
a dead `dev` left behind (stop it, then take the lock).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

_SURVIVOR_GRACE_S = 15.0
"""How long a server left behind gets to close its database after SIGTERM before it gets SIGKILL."""


@dataclass
class StateDirLock:
    path: Path
    handle: IO[str]

    @property
    def fd(self) -> int:
        """The locked descriptor, for the Temporal server to inherit."""
        return self.handle.fileno()

    def record(self, *, temporal_pid: int | None) -> None:
        """Write down who holds the lock, for the next `dev` to read if this one is killed."""
        self.handle.seek(0)
        self.handle.truncate()
        json.dump({"dev": os.getpid(), "temporal": temporal_pid}, self.handle)
        self.handle.flush()


def make_private(state_dir: Path) -> None:
    """Create `state_dir` readable by its owner only, and take that back from a directory made looser before.

    It holds every task's history (arguments, answers, results) in `temporal.db`, and payloads too
    large for it: no other local user may read them.
    """
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(state_dir, 0o700)


def private_file(path: Path) -> None:
    """`path`, created if missing, readable by its owner only (SQLite gives its -wal and -shm files the same mode)."""
    path.touch(mode=0o600, exist_ok=True)
    os.chmod(path, 0o600)


@contextmanager
def state_dir_lock(state_dir: Path) -> Generator[StateDirLock]:
    """Hold `state_dir` for one `dev`; a Temporal server a killed `dev` left running there is stopped first."""
    make_private(state_dir)
    path = state_dir / "dev.lock"
    with path.open("a+") as handle:
        if not _try_lock(handle):
            holder = _holder(path)
            if _alive(holder.get("dev"), b"mcp"):
                raise RuntimeError(
                    f"the state directory {state_dir} is in use by another `mcp-tasks-temporal dev` "
                    f"(pid {holder['dev']}); choose another with --state-dir DIR"
                )
            survivor = holder.get("temporal")
            if not _alive(survivor, b"start-dev"):
                raise RuntimeError(
                    f"the state directory {state_dir} is locked by a process that is not dev's; see {path}"
                )
            assert isinstance(survivor, int)
            print(
                f"mcp-tasks-temporal dev: stopping the Temporal server (pid {survivor}) that a killed dev left "
                f"running on {state_dir}",
                flush=True,
            )
            if not _replace(handle, survivor):
                raise RuntimeError(f"the Temporal server (pid {survivor}) left running on {state_dir} would not stop")
        lock = StateDirLock(path, handle)
        lock.record(temporal_pid=None)
        # Closing releases it once the Temporal server, which shares it, is gone too; an explicit unlock
        # would release it for the server as well, even one that somehow outlived its stop.
        yield lock


def _try_lock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(path: Path) -> dict[str, Any]:
    try:
        holder = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _alive(pid: object, marker: bytes) -> bool:
    """A running (not zombie) process with this pid whose command line mentions `marker`, where /proc tells."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return True
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        command = (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return state != "Z" and marker in command


def _replace(handle: IO[str], survivor: int) -> bool:
    """SIGTERM, then SIGKILL after a grace period; True once the lock is ours."""
    for sig, wait_s in ((signal.SIGTERM, _SURVIVOR_GRACE_S), (signal.SIGKILL, 10.0)):
        try:
            os.kill(survivor, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if _try_lock(handle):
                return True
            time.sleep(0.1)
    return _try_lock(handle)
