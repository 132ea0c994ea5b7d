"""The child processes `dev` runs (its Temporal server and its worker): their logs, and how they stop."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import BinaryIO

import anyio
from anyio.abc import Process


def open_log(log_path: Path) -> tuple[BinaryIO, int]:
    """The log opened for appending, and where this run's output starts in it (earlier runs stay above)."""
    log_file = log_path.open("ab")
    return log_file, log_file.tell()


def log_since(log_path: Path, start: int) -> str:
    """What the child wrote to its log since `start`."""
    with log_path.open("rb") as log:
        log.seek(start)
        return log.read().decode(errors="replace")


async def stop_gracefully(process: Process, *, grace_s: float) -> None:
    """SIGTERM, so it runs its own shutdown; SIGKILL if that takes longer than `grace_s`."""
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        with anyio.move_on_after(grace_s):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
