"""Every server option has an environment variable, named in --help, parsed as the flag is."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from mcp_tasks_temporal.ops.cli import build_parser

SERVER_COMMANDS = ("dev", "serve", "worker", "codec-server")


@pytest.mark.parametrize("command", SERVER_COMMANDS)
def test_every_option_names_its_variable_in_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = capsys.readouterr().out
    options = text.split("\noptions:\n", 1)[1]
    # One entry per flag: the line that starts with it, up to the next entry.
    entries = re.split(r"\n  (?=--)", options)
    unnamed = [entry.split()[0] for entry in entries if entry.strip().startswith("--") and "$" not in entry]
    assert unnamed == []


def test_a_variable_is_the_default_and_a_flag_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_PORT", "9001")
    monkeypatch.setenv("MCP_TASKS_MAX_CONCURRENT_TOOLS", "7")
    monkeypatch.setenv("MCP_TASKS_JWT_SCOPES", "read, write,")
    monkeypatch.setenv("MCP_TASKS_OTEL", "true")
    monkeypatch.setenv("MCP_TASKS_TTL_MS", "none")
    monkeypatch.setenv("MCP_TASKS_APP", "tests.fixture_app:app")
    args = build_parser().parse_args(["serve"])
    assert (args.port, args.jwt_scope, args.otel, args.ttl_ms, args.app) == (
        9001,
        ["read", "write"],
        True,
        None,
        "tests.fixture_app:app",
    )
    assert build_parser().parse_args(["worker"]).max_concurrent_tools == 7
    assert build_parser().parse_args(["serve", "--port", "9002"]).port == 9002


def test_the_codec_server_keeps_its_own_address_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_PORT", "9001")
    monkeypatch.setenv("MCP_TASKS_CODEC_PORT", "9100")
    assert build_parser().parse_args(["codec-server"]).port == 9100


@pytest.mark.parametrize(
    ("variable", "value"),
    [("MCP_TASKS_PORT", "eighty"), ("MCP_TASKS_OTEL", "maybe"), ("MCP_TASKS_TRANSPORT", "carrier-pigeon")],
)
def test_a_bad_variable_stops_the_command_on_one_line_naming_it(variable: str, value: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mcp_tasks_temporal", "serve", "--app", "tests.fixture_app:app"],
        env={**_clean_env(), variable: value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert f"${variable}" in run.stderr.strip().splitlines()[-1]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "TEMPORAL_"))}
