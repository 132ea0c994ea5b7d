"""Reaching Temporal as its own CLI does: TEMPORAL_* variables, profiles, flags; TLS, mTLS and API keys.

The connections go through a TLS terminator in this process to the session's dev server; a task runs
on a worker and a front in this process connected that way, and each refused connection is one line.
That `serve` and `worker` stop on that line with exit status 2 is checked on the processes themselves.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from mcp_tasks_temporal.temporal.connection import (
    ConnectionOptions,
    TemporalConnectionError,
    connect,
    connect_config,
)
from tests.app_workers import app_worker, new_task_queue
from tests.cli_runs import settings_of
from tests.front_app import fresh_app, in_process_front
from tests.processes import CLI, FIXTURE_APP, REPO_ROOT, child_env
from tests.tls_proxy import CertificateAuthority, Pem, TlsTerminator

pytestmark = pytest.mark.anyio


# -- the mapping from environment, profile and flags to Client.connect -------------------


def test_standard_variables_configure_address_namespace_tls_and_api_key(tmp_path: Path) -> None:
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text(name)
    env = {
        "TEMPORAL_ADDRESS": "temporal.example:7233",
        "TEMPORAL_NAMESPACE": "prod",
        "TEMPORAL_API_KEY": "key-123",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(tmp_path / "ca.pem"),
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(tmp_path / "client.pem"),
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(tmp_path / "client.key"),
        "TEMPORAL_TLS_SERVER_NAME": "frontend.internal",
        "TEMPORAL_GRPC_META_X_TENANT": "blue",
    }
    config = connect_config(ConnectionOptions(), env)
    assert config["target_host"] == "temporal.example:7233"
    assert config["namespace"] == "prod"
    assert config["api_key"] == "key-123"
    assert config["rpc_metadata"] == {"x-tenant": "blue"}
    tls = config["tls"]
    assert isinstance(tls, TLSConfig)
    assert (tls.server_root_ca_cert, tls.client_cert, tls.client_private_key) == (
        b"ca.pem",
        b"client.pem",
        b"client.key",
    )
    assert tls.domain == "frontend.internal"


def test_an_api_key_alone_means_tls_with_the_system_roots() -> None:
    config = connect_config(
        ConnectionOptions(), {"TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233", "TEMPORAL_API_KEY": "k"}
    )
    assert config["tls"] is True and config["api_key"] == "k"


def test_nothing_configured_is_the_local_default_in_plaintext() -> None:
    config = connect_config(ConnectionOptions(), {})
    assert config["target_host"] == "127.0.0.1:7233" and config["namespace"] == "default"
    assert "tls" not in config and "api_key" not in config
    # Empty variables (`TEMPORAL_API_KEY: ""` in a compose file) count as unset.
    assert (
        connect_config(ConnectionOptions(), {"TEMPORAL_API_KEY": "", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": ""}) == config
    )


def test_flags_override_the_profile_and_the_profile_comes_from_temporal_profile(tmp_path: Path) -> None:
    toml = tmp_path / "temporal.toml"
    toml.write_text(
        '[profile.default]\naddress = "dev:7233"\n'
        '[profile.prod]\naddress = "prod:7233"\nnamespace = "payments"\napi_key = "from-file"\n'
    )
    env = {"TEMPORAL_CONFIG_FILE": str(toml), "TEMPORAL_PROFILE": "prod"}
    assert connect_config(ConnectionOptions(), env)["target_host"] == "prod:7233"
    args = settings_of(["worker", "--app", FIXTURE_APP, "--address", "other:7233", "--namespace", "ops", "--no-tls"])
    config = connect_config(args.connection_options(), env)
    assert (config["target_host"], config["namespace"], config["api_key"]) == ("other:7233", "ops", "from-file")
    assert config["tls"] is False
    # `--temporal`, the older spelling, is the same flag.
    legacy = settings_of(["serve", "--app", FIXTURE_APP, "--temporal", "legacy:7233"])
    assert connect_config(legacy.connection_options(), env)["target_host"] == "legacy:7233"


# -- against the dev server behind a TLS terminator --------------------------------------


@dataclass
class Pki:
    ca: CertificateAuthority
    server: Pem
    client: Pem
    stranger: CertificateAuthority


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority(folder, "test-ca")
    return Pki(ca, ca.issue("server", server=True), ca.issue("client", server=False), CertificateAuthority(folder, "x"))


@pytest.fixture
def tls_endpoint(temporal: str, pki: Pki) -> Generator[tuple[str, TlsTerminator]]:
    """Server-authenticated TLS only, as Temporal Cloud with API keys."""
    proxy = TlsTerminator(temporal, pki.server)
    with proxy.running() as address:
        yield address, proxy


@pytest.fixture
def mtls_endpoint(temporal: str, pki: Pki) -> Generator[str]:
    """TLS that also requires a client certificate from the test CA, as a self-hosted cluster with mTLS."""
    with TlsTerminator(temporal, pki.server, client_ca=pki.ca.pem.cert).running() as address:
        yield address


async def _one_task_completes(env: dict[str, str]) -> None:
    """A task through a worker and a front whose client `env` configures, as `worker` and `serve` connect."""
    client = await connect(ConnectionOptions(), environ=env)
    assert (client.service_client.config.target_host, client.namespace) == (env["TEMPORAL_ADDRESS"], "default")
    queue = new_task_queue("tls")
    async with (
        app_worker(client, fresh_app(), task_queue=queue),
        in_process_front(fresh_app(), client, task_queue=queue) as front,
        front.http() as http,
    ):
        mcp = front.calls(http)
        created = await mcp.start("double", {"x": 21})
        done = await mcp.wait_for(created["taskId"])
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"] == {"value": 42}


async def _refused(env: dict[str, str]) -> str:
    """The one line a connection `env` configures is refused with, as `serve` and `worker` print it."""
    with pytest.raises(TemporalConnectionError) as refused:
        await connect(ConnectionOptions(), environ=env)
    line = str(refused.value)
    assert "\n" not in line and "Traceback" not in line, line
    return line


async def test_a_task_completes_over_tls_with_an_api_key_from_the_standard_variables(
    pki: Pki, tls_endpoint: tuple[str, TlsTerminator]
) -> None:
    address, proxy = tls_endpoint
    api_key = f"key-{uuid.uuid4().hex}"
    env = {
        "TEMPORAL_ADDRESS": address,
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca.pem.cert),
        "TEMPORAL_API_KEY": api_key,
    }
    await _one_task_completes(env)
    # The dev server ignores credentials, so what is checked is that every call carried the key.
    paths = [value for name, value in proxy.headers if name == ":path"]
    keys = [value for name, value in proxy.headers if name == "authorization"]
    assert any(path.endswith("/StartWorkflowExecution") for path in paths)
    assert any(path.endswith("/PollWorkflowTaskQueue") for path in paths)
    assert keys and set(keys) == {f"Bearer {api_key}"} and len(keys) == len(paths)


async def test_a_task_completes_over_mtls_from_the_standard_variables(pki: Pki, mtls_endpoint: str) -> None:
    env = {
        "TEMPORAL_ADDRESS": mtls_endpoint,
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca.pem.cert),
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.client.cert),
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki.client.key),
    }
    await _one_task_completes(env)


def _fails_cleanly(command: str, env: dict[str, str]) -> str:
    """Run serve/worker to its failure; return its one line of stderr."""
    extra = ["--port", "1"] if command == "serve" else []  # never reached: the connection fails first
    done = subprocess.run(
        [*CLI, command, "--app", FIXTURE_APP, "--task-queue", "unused", *extra],
        cwd=REPO_ROOT,
        env={**child_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp-tasks-temporal: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_refused_connection_stops_serve_and_worker_on_its_one_line_with_exit_status_2(
    command: str, pki: Pki, tls_endpoint: tuple[str, TlsTerminator]
) -> None:
    env = {"TEMPORAL_ADDRESS": tls_endpoint[0], "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.stranger.pem.cert)}
    assert "not signed by a trusted CA" in _fails_cleanly(command, env)


async def test_a_missing_client_certificate_fails_in_one_line(pki: Pki, mtls_endpoint: str) -> None:
    env = {"TEMPORAL_ADDRESS": mtls_endpoint, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca.pem.cert)}
    assert "client certificate" in await _refused(env)


async def test_a_client_certificate_from_another_ca_fails_in_one_line(pki: Pki, mtls_endpoint: str) -> None:
    stranger = pki.stranger.issue("stranger-client", server=False)
    env = {
        "TEMPORAL_ADDRESS": mtls_endpoint,
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca.pem.cert),
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(stranger.cert),
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(stranger.key),
    }
    assert "client certificate" in await _refused(env)


async def test_refused_connections_and_unknown_namespaces_fail_in_one_line(temporal: str, tmp_path: Path) -> None:
    assert "connection refused" in await _refused({"TEMPORAL_ADDRESS": "127.0.0.1:1"})
    missing = await _refused({"TEMPORAL_ADDRESS": temporal, "TEMPORAL_NAMESPACE": "no-such-namespace"})
    assert "namespace does not exist" in missing
    unreadable = {"TEMPORAL_ADDRESS": temporal, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(tmp_path / "absent.pem")}
    assert "absent.pem" in await _refused(unreadable)
