"""The command line starts fast: `--help` imports neither Temporal, nor the MCP SDK, nor uvicorn; the script's own
`--help` not even pydantic."""

from __future__ import annotations

import json
import subprocess
import sys

from mcp_tasks_temporal.ops import cli
from mcp_tasks_temporal.ops.settings.processes import GlobalSettings
from tests.processes import REPO_ROOT, child_env

HEAVY = ("temporalio", "mcp", "mcp_types", "uvicorn", "starlette", "cryptography", "anyio")
"""Seconds of imports that only running a command needs. Parsing a command validates its settings, so it
imports pydantic (a fifth of a second); `mcp-tasks-temporal --help` does not."""


def test_the_top_level_help_names_every_command() -> None:
    names = list(cli.root.list_commands(cli.click.Context(cli.root)))
    assert len(names) == 13, names
    description = cli.__doc__ or ""
    missing = [name for name in names if f"`{name}`" not in description]
    assert not missing, description
    for name in names:
        assert cli.root.get_command(cli.click.Context(cli.root), name) is not None, name


def test_the_root_log_level_option_says_what_its_setting_reads() -> None:
    [option] = [param for param in cli.root.params if param.name == "log_level"]
    assert f"${GlobalSettings.variable('log_level')}" in (getattr(option, "help", "") or "")


def _imported_after(script: str) -> list[str]:
    code = f"""
import json, sys
{script}
print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}})))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_parsing_any_command_line_imports_no_heavy_package() -> None:
    imported = _imported_after(
        """
from mcp_tasks_temporal.ops.cli import Invocation, parse
for argv in (["dev"], ["serve", "--app", "x:y"], ["call", "tool"], ["audit", "T"], ["admin", "tasks"],
             ["admin", "cancel", "--older-than", "7d"], ["codec-key"], ["codec-server"]):
    assert isinstance(parse(argv), Invocation), argv
"""
    )
    assert set(imported) & set(HEAVY) == set()


def test_the_scripts_own_help_imports_not_even_pydantic() -> None:
    imported = _imported_after(
        """
from mcp_tasks_temporal.ops.cli import parse
assert parse(["--help"]) == 0
"""
    )
    assert set(imported) & {*HEAVY, "pydantic", "pydantic_settings"} == set()


def test_help_runs_without_the_heavy_packages() -> None:
    """`--help` of a command prints its options (run for real, as a user would)."""
    for command in (["--help"], ["dev", "--help"], ["tasks", "--help"], ["admin", "cancel", "--help"]):
        done = subprocess.run(
            [sys.executable, "-m", "mcp_tasks_temporal", *command],
            cwd=REPO_ROOT,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and "Usage: mcp-tasks-temporal" in done.stdout, done.stderr
