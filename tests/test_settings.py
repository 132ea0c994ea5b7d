"""Every server option has an environment variable, named in --help, parsed as the flag is; each process one model."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from mcp_tasks_temporal.ops.cli import parse
from mcp_tasks_temporal.ops.settings.model import Settings
from mcp_tasks_temporal.ops.settings.processes import (
    AuditSettings,
    ClientSettings,
    CodecServerSettings,
    DeploymentSettings,
    DevSettings,
    GlobalSettings,
    ServeSettings,
    WorkerSettings,
)
from tests.cli_runs import run_in_process, settings_of
from tests.processes import REPO_ROOT, child_env

pytestmark = pytest.mark.anyio

SERVER_COMMANDS = ("dev", "serve", "worker", "codec-server")
MODELS: tuple[type[Settings], ...] = (
    GlobalSettings,
    DevSettings,
    ServeSettings,
    WorkerSettings,
    CodecServerSettings,
    ClientSettings,
    AuditSettings,
    DeploymentSettings,
)
READ_ELSEWHERE = {
    "MCP_TASKS_PUSH": "the front's push mode (front/push_mode.py)",
    "MCP_TASKS_AGENT_MODEL": "also the sub-agents' model on a worker (contrib/pydantic_ai)",
    "MCP_TASKS_REVIEW_ROOT": "the demo's review tool",
    "MCP_TASKS_README_PORTS": "the README test",
    "MCP_TASKS_FUZZ_EXAMPLES": "the test suite",
}
"""Variables the docs name that no process's settings read."""


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in child_env().items() if not k.startswith(("MCP_TASKS_", "TEMPORAL_"))}


@pytest.mark.parametrize("command", SERVER_COMMANDS)
async def test_every_option_names_its_variable_in_help(command: str) -> None:
    shown = await run_in_process([command, "--help"], stdin="", env=_clean_env())
    assert shown.code == 0, shown.err
    # One entry per flag: the line that starts with it, up to the next entry or section.
    entries = re.split(r"\n(?=  -)|\n\n", shown.out.split("\nOptions:\n", 1)[1])
    flags = [entry for entry in entries if entry.strip().startswith("--")]
    assert len(flags) > 5, shown.out
    unnamed = [entry.split()[0] for entry in flags if "$" not in entry]
    assert unnamed == []


def test_a_variable_is_the_default_and_a_flag_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_PORT", "9001")
    monkeypatch.setenv("MCP_TASKS_MAX_CONCURRENT_TOOLS", "7")
    monkeypatch.setenv("MCP_TASKS_JWT_SCOPES", "read, write,")
    monkeypatch.setenv("MCP_TASKS_OTEL", "true")
    monkeypatch.setenv("MCP_TASKS_TTL_MS", "none")
    monkeypatch.setenv("MCP_TASKS_APP", "tests.fixture_app:app")
    args = settings_of(["serve"])
    assert (args.port, args.jwt_scope, args.otel, args.ttl_ms, args.app) == (
        9001,
        ["read", "write"],
        True,
        None,
        "tests.fixture_app:app",
    )
    assert "ttl_ms" in args.model_fields_set, "a TTL of none was asked for, unlike a TTL left unset"
    assert settings_of(["worker"]).max_concurrent_tools == 7
    assert settings_of(["serve", "--port", "9002"]).port == 9002
    assert settings_of(["serve", "--no-fairness-keys"]).fairness_keys is False
    assert settings_of(["serve", "--jwt-scope", "admin"]).jwt_scope == ["admin"], "flags replace the variable's list"


def test_the_temporal_connection_is_left_to_temporals_own_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """`TEMPORAL_*` and the temporal.toml profile are resolved by temporalio.envconfig, under the flags."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", "cluster:7233")
    monkeypatch.setenv("MCP_TASKS_ADDRESS", "never:1")
    args = settings_of(["worker", "--app", "m:a"])
    assert args.address is None and args.connection_options().address is None
    assert settings_of(["worker", "--app", "m:a", "--temporal", "flag:7233"]).connection_options().address == (
        "flag:7233"
    )


def test_the_codec_server_keeps_its_own_address_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_PORT", "9001")
    monkeypatch.setenv("MCP_TASKS_CODEC_PORT", "9100")
    assert settings_of(["codec-server"]).port == 9100


def test_secrets_come_from_the_environment_only_and_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_OWNER_SECRET", "s" * 24)
    monkeypatch.setenv("MCP_TASKS_CODEC_KEYS", "a-key")
    args = settings_of(["serve", "--app", "m:a"])
    assert args.owner_secret.get_secret_value() == "s" * 24
    assert "s" * 24 not in repr(args) and "a-key" not in repr(args)
    assert parse(["serve", "--app", "m:a", "--owner-secret", "x"]) == 2, "a flag would show the secret in `ps`"


def test_every_variable_the_docs_name_is_read() -> None:
    known = {name for model in MODELS for field in model.model_fields if (name := model.variable(field))}
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    named = {name for page in pages for name in re.findall(r"MCP_TASKS_[A-Z][A-Z_]*[A-Z]", page.read_text())}
    assert named, "the docs name no variable: update this test"
    assert named - known - set(READ_ELSEWHERE) == set()


@pytest.mark.parametrize(
    ("variable", "value"),
    [("MCP_TASKS_PORT", "eighty"), ("MCP_TASKS_OTEL", "maybe"), ("MCP_TASKS_TRANSPORT", "carrier-pigeon")],
)
def test_a_bad_variable_stops_the_command_on_one_line_naming_it(variable: str, value: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mcp_tasks_temporal", "serve", "--app", "tests.fixture_app:app"],
        env={**_clean_env(), variable: value},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    [line] = run.stderr.strip().splitlines()
    assert f"${variable}" in line and repr(value) in line


async def test_a_missing_setting_names_its_flag_and_its_variable() -> None:
    missing = await run_in_process(["worker"], stdin="", env=_clean_env())
    assert missing.code == 2
    [line] = missing.err.strip().splitlines()
    assert "--app" in line and "$MCP_TASKS_APP" in line, line
