"""`dev`'s worker process gets every worker option `dev` was given, and never the user's cluster settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_tasks_temporal.ops.dev.worker_process import PARENT_PID_ENV, worker_command, worker_environment
from mcp_tasks_temporal.ops.settings.processes import DevSettings, WorkerSettings
from tests.cli_runs import settings_of

CONNECTION = {"address", "namespace", "api_key", "tls", "tls_ca_path", "tls_cert_path", "tls_key_path"}
NOT_THE_WORKERS = (
    CONNECTION
    | {"tls_server_name", "profile", "config_file", "metrics_port", "metrics_host"}
    | {
        # From the environment `dev` hands its worker, not from flags.
        "owner_secret",
        "legacy_owner_keys",
        "codec_keys",
        "codec_allow_plaintext",
        "stop_with_parent",
    }
)


def test_every_worker_option_dev_was_given_reaches_its_worker(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    dev = settings_of(
        ["dev", "--app", "tests.fixture_app:app", "--task-queue", "q1"]
        + ["--max-concurrent-tools", "7", "--max-cached-workflows", "9", "--graceful-shutdown", "4.5"]
        + ["--agent-model", "m1", "--codec-key-file", str(keys), "--otel"]
        + ["--payload-dir", str(tmp_path / "payloads"), "--payload-threshold", "1000", "--payload-max-bytes", "5000"]
    )
    command = worker_command(dev, address="127.0.0.1:17233", namespace="ns1")
    assert command[1:3] == ["-m", "mcp_tasks_temporal"]
    worker = settings_of(command[3:])
    assert isinstance(worker, WorkerSettings)
    assert (worker.address, worker.namespace) == ("127.0.0.1:17233", "ns1")
    shared = (set(WorkerSettings.model_fields) & set(DevSettings.model_fields)) - NOT_THE_WORKERS
    assert shared >= {"app", "task_queue", "max_concurrent_tools", "graceful_shutdown", "codec_key_file", "otel"}
    assert shared >= {"payload_storage", "payload_dir", "payload_threshold", "payload_max_bytes"}
    for name in shared:
        assert getattr(worker, name) == getattr(dev, name), name


def test_devs_build_reaches_its_worker_which_makes_it_current() -> None:
    dev = settings_of(
        ["dev", "--task-queue", "q1", "--payload-storage", "none", "--deployment-name", "tasks", "--build-id", "7"]
    )
    worker = settings_of(worker_command(dev, address="127.0.0.1:17233", namespace="ns1")[3:])
    assert (worker.deployment_name, worker.build_id, worker.make_current) == ("tasks", "7", True)
    unversioned = settings_of(["dev", "--task-queue", "q1", "--payload-storage", "none"])
    worker = settings_of(worker_command(unversioned, address="127.0.0.1:17233", namespace="ns1")[3:])
    assert (worker.deployment_name, worker.build_id, worker.make_current) == (None, None, False)


def test_the_worker_ignores_the_users_cluster_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "cloud.example:7233")
    monkeypatch.setenv("TEMPORAL_API_KEY", "secret")
    monkeypatch.setenv("MCP_TASKS_CODEC_KEYS", "kept")
    environment = worker_environment()
    assert "TEMPORAL_ADDRESS" not in environment and "TEMPORAL_API_KEY" not in environment
    assert environment["TEMPORAL_CONFIG_FILE"] == os.devnull
    assert environment["MCP_TASKS_CODEC_KEYS"] == "kept"
    assert environment[PARENT_PID_ENV] == str(os.getpid())
