"""Processes of one task queue that disagree on what they must share are refused at start, in one line.

Real `worker` and `serve` processes on the session's dev server: each holds its settings out while
it runs, a later one that contradicts a running one exits at once with status 2, naming the setting
and the process it disagrees with, instead of failing a client's request later (TMPRL1105); a
process that has stopped is named no more.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest
from temporalio.client import Client

from mcp_tasks_temporal.temporal.codec import new_key
from mcp_tasks_temporal.temporal.payload_storage import StorageSettings
from mcp_tasks_temporal.temporal.shared_settings import (
    LIVE_WITHIN_S,
    POLL_S,
    SettingsDisagreement,
    SharedSettings,
    check_shared_settings,
    disagreement,
    running_settings,
)
from tests.processes import CLI, FIXTURE_APP, REPO_ROOT, Process, child_env, free_port, start_worker

pytestmark = pytest.mark.anyio

REFUSED_WITHIN_S = 60
"""A refused process exits after its imports and one describe: far less, on a loaded machine too."""


async def refused(temporal: str, queue: str, command: str, *extra: str) -> str:
    """Run `command` on `queue`, which must exit 2; its one line."""
    port = ["--port", str(free_port())] if command == "serve" else []
    argv = [*CLI, command, "--temporal", temporal, "--task-queue", queue, "--app", FIXTURE_APP, *port, *extra]
    with anyio.fail_after(REFUSED_WITHIN_S):
        done = await anyio.run_process(argv, cwd=REPO_ROOT, env=child_env(), check=False)
    lines = [line for line in done.stderr.decode().splitlines() if line.startswith("mcp-tasks-temporal: ")]
    assert done.returncode == 2 and len(lines) == 1, done.stderr.decode()
    return lines[0]


def stop(*processes: Process) -> None:
    for process in processes:
        process.stop()


async def test_a_front_without_the_workers_payload_storage_is_refused(
    workdir: Path, temporal: str, tmp_path: Path
) -> None:
    queue = f"settings-{uuid.uuid4()}"
    storage = ["--payload-storage", "local", "--payload-dir", str(tmp_path / "payloads")]
    worker = start_worker(workdir, temporal, queue, extra=storage)
    try:
        line = await refused(temporal, queue, "serve", "--payload-storage", "none")
        assert "payload storage" in line and "this serve has none" in line and "worker pid" in line, line
        assert str(tmp_path / "payloads") in line
        threshold = await refused(temporal, queue, "serve", *storage, "--payload-threshold", "1000")
        assert "threshold" in threshold, threshold
    finally:
        stop(worker)


async def test_codec_keys_must_open_what_the_others_seal_and_a_rotation_rolls(
    workdir: Path, temporal: str, tmp_path: Path
) -> None:
    queue = f"settings-{uuid.uuid4()}"
    old, new = tmp_path / "old", tmp_path / "new"
    old.write_text(new_key() + "\n")
    new.write_text(new_key() + "\n")
    both = tmp_path / "both"
    both.write_text(old.read_text() + new.read_text())  # the old key still encrypts, the new one decrypts
    worker = start_worker(workdir, temporal, queue, extra=["--codec-key-file", str(old)])
    rolled: list[Process] = []
    try:
        line = await refused(temporal, queue, "serve", "--codec-key-file", str(new))
        assert "codec keys" in line and "worker pid" in line, line
        assert "payload codec" in await refused(temporal, queue, "worker")
        rolled.append(start_worker(workdir, temporal, queue, extra=["--codec-key-file", str(both)]))
    finally:
        stop(worker, *rolled)


async def test_an_unversioned_worker_beside_a_versioned_one_is_refused(workdir: Path, temporal: str) -> None:
    queue = f"settings-{uuid.uuid4()}"
    deployment = f"settings-{uuid.uuid4().hex[:8]}"
    worker = start_worker(workdir, temporal, queue, extra=["--deployment-name", deployment, "--build-id", "1"])
    try:
        line = await refused(temporal, queue, "worker")
        assert "tool-task versioning" in line and "unversioned" in line and deployment in line, line
        other = start_worker(workdir, temporal, queue, extra=["--deployment-name", deployment, "--build-id", "2"])
        stop(other)
    finally:
        stop(worker)


async def test_a_disagreement_names_running_processes_only(
    workdir: Path, temporal: str, temporal_client: Client, tmp_path: Path
) -> None:
    queue = f"settings-{uuid.uuid4()}"
    payloads = tmp_path / "payloads"
    storage = ["--payload-storage", "local", "--payload-dir", str(payloads)]
    worker = start_worker(workdir, temporal, queue, extra=storage)
    mine = SharedSettings.of("serve", StorageSettings(), None, None)
    try:
        with pytest.raises(SettingsDisagreement) as refusal:
            await check_shared_settings(temporal_client, queue, mine)
        assert "worker pid" in str(refusal.value) and str(payloads) in str(refusal.value), refusal.value
    finally:
        worker.kill()  # no goodbye: its last poll simply grows old
    # Within the window after its last poll it may still be named; after it, never again.
    with anyio.fail_after(LIVE_WITHIN_S + POLL_S + REFUSED_WITHIN_S):
        while await running_settings(temporal_client, queue):
            await anyio.sleep(1)
    await check_shared_settings(temporal_client, queue, mine)


def test_settings_travel_as_a_poller_identity_temporal_takes() -> None:
    held = settings(storage="local /srv/payloads", threshold=2_000_000, codec=["k1", "k2"], deployment="myapp")
    card = held.card()
    assert SharedSettings.from_card(card) == held and len(card) < 1000
    assert SharedSettings.from_card("4242@build-7") is None, "a worker of the task queue, not a settings card"
    assert SharedSettings.from_card('{"mcp-tasks-settings": 2, "storage": "none"}') is None, "another format"


def settings(**changes: object) -> SharedSettings:
    base: dict[str, object] = {
        "storage": "none",
        "threshold": None,
        "codec": ["k1"],
        "deployment": "",
        "writer": "worker pid 1 on h",
    }
    return SharedSettings(**{**base, **changes})  # type: ignore[arg-type]


def test_what_must_match() -> None:
    assert disagreement(settings(), settings()) is None
    assert disagreement(settings(deployment=None), settings(deployment="d")) is None, "a front has no say"
    assert disagreement(settings(codec=["k1", "k2"]), settings()) is None, "a key added second"
    assert disagreement(settings(codec=["k2", "k1"]), settings(codec=["k1", "k2"])) is None, "then moved first"
    assert disagreement(settings(codec=["k2"]), settings(codec=["k1", "k2"])) is not None, "k1's payloads unread"
    assert disagreement(settings(codec=[]), settings()) is not None
    assert disagreement(settings(storage="local /a", threshold=1), settings()) is not None
