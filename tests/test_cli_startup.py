"""The command line starts fast: parsing and `--help` import neither Temporal, nor the MCP SDK, nor uvicorn."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any, cast

from mcp_tasks_temporal.ops.cli import build_parser
from tests.processes import REPO_ROOT, child_env

HEAVY = ("temporalio", "mcp", "mcp_types", "uvicorn", "starlette", "pydantic", "cryptography", "anyio")


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    actions = parser._actions  # pyright: ignore[reportPrivateUsage]
    [commands] = [a for a in actions if isinstance(a.choices, dict)]
    return list(cast("dict[str, Any]", commands.choices))


def test_the_top_level_help_names_every_command() -> None:
    parser = build_parser()
    names = _subcommands(parser)
    assert len(names) == 13, names
    description = parser.description or ""
    missing = [name for name in names if f"`{name}`" not in description]
    assert not missing, description


def test_parsing_any_command_line_imports_no_heavy_package() -> None:
    script = f"""
import json, sys
from mcp_tasks_temporal.ops.cli import build_parser
parser = build_parser()
for argv in (["dev"], ["serve", "--app", "x:y"], ["call", "tool"], ["audit", "T"], ["admin", "tasks"], ["codec-key"]):
    parser.parse_args(argv)
print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}} & set({list(HEAVY)!r}))))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


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
        assert done.returncode == 0 and "usage: mcp-tasks-temporal" in done.stdout, done.stderr
