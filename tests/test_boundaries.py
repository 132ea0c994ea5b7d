"""The boundaries docs/design.md draws, checked on every run rather than trusted to prose.

import-linter's contracts (pyproject.toml, `[tool.importlinter]`) keep the layers apart; the checks
below cover what an import graph cannot see: where environment variables are read and where
third-party private names are touched.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.processes import REPO_ROOT, child_env

PACKAGE = REPO_ROOT / "src" / "mcp_tasks_temporal"
SETTINGS = PACKAGE / "ops" / "settings" / "environment.py"
SDK_COMPAT = PACKAGE / "sdk_compat.py"
FRONT = PACKAGE / "front"

FRONT_LINE_CAP = 450
"""A front module longer than this does more than one job: split it where its parts run or what they answer."""
LONG_FRONT_MODULES: dict[str, int] = {
    # Longer than the cap, to split; each may only shrink, and leaves the list once under the cap.
}

FRONT_MODULES_AN_APP_LOADS = frozenset(
    {
        # What `from mcp_tasks_temporal import TasksExtension` and building the app load of front/: the facade,
        # the session keys it defaults to and its methods' params. A worker loading the app stops there.
        "mcp_tasks_temporal.front",
        "mcp_tasks_temporal.front.extension",
        "mcp_tasks_temporal.front.session_binding",
        "mcp_tasks_temporal.front.task_params",
    }
)


def _sources() -> list[Path]:
    # workflows/ and activities/ are linked into temporal/: resolve() keeps each file once.
    return sorted({path.resolve() for path in PACKAGE.rglob("*.py")})


def test_the_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def _environment_reads(tree: ast.AST) -> list[int]:
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb"}:
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                lines.append(node.lineno)
    return lines


def test_environment_variables_are_read_in_ops_settings_environment_only() -> None:
    readers = {
        str(path.relative_to(REPO_ROOT.resolve()))
        for path in _sources()
        if path != SETTINGS.resolve() and _environment_reads(ast.parse(path.read_text(), str(path)))
    }
    assert not readers, f"read the variable in a settings model (ops/settings/) instead: {sorted(readers)}"


def _private_reads(tree: ast.AST) -> list[str]:
    """Underscore names imported from another package, and `# pyright: ignore[reportPrivateUsage]` escapes."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.module.startswith("mcp_tasks_temporal"):
            found.extend(
                f"{node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            )
    return found


def test_third_party_private_names_are_touched_in_sdk_compat_only() -> None:
    found: list[str] = []
    for path in _sources():
        if path == SDK_COMPAT.resolve():
            continue
        text = path.read_text()
        where = path.relative_to(REPO_ROOT.resolve())
        found.extend(f"{where}:{hit}" for hit in _private_reads(ast.parse(text, str(where))))
        found.extend(
            f"{where}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), start=1)
            if "reportPrivateUsage" in line
        )
    assert not found, f"move these behind a function in sdk_compat.py, with a canary: {found}"


def _front_modules_loaded_by(script: str) -> list[str]:
    """The `mcp_tasks_temporal.front` modules a fresh interpreter holds after running `script`."""
    front = "[m for m in sys.modules if m.startswith('mcp_tasks_temporal.front')]"
    report = f"import json, sys; print(json.dumps(sorted({front})))"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script) + "\n" + report],
        cwd=REPO_ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_tool_registry_and_the_worker_side_import_nothing_of_the_front() -> None:
    loaded = _front_modules_loaded_by(
        """
        import mcp_tasks_temporal.temporal.tool_execution
        import mcp_tasks_temporal.temporal.tool_registry
        """
    )
    assert loaded == []


def test_a_worker_loading_the_app_and_running_a_task_tool_loads_no_front_handlers() -> None:
    # A task's round on a worker: the activity binds the run and calls the app's tools/call handler, which the
    # extension intercepts; the interception must step aside without reaching the front's handlers.
    loaded = _front_modules_loaded_by(
        """
        import asyncio
        from typing import Any
        from mcp.server.mcpserver import MCPServer
        from mcp_types import CallToolRequestParams
        from mcp_tasks_temporal import TasksExtension, ToolTaskOptions
        from mcp_tasks_temporal.temporal.progress import TaskRun, bind_run

        tasks = TasksExtension()
        app = MCPServer("worker-side", extensions=[tasks])
        tasks.enable("build", ToolTaskOptions(policy="required"))

        async def tool_runs(ctx: Any) -> str:
            return "ran"

        async def round_on_a_worker() -> Any:
            bind_run(TaskRun(workflow_id="mcp-task/anonymous/t"))
            ctx: Any = None  # the worker's own request context; the tool below does not read it
            return await tasks.intercept_tool_call(CallToolRequestParams(name="build"), ctx, tool_runs)

        assert asyncio.run(round_on_a_worker()) == "ran"
        """
    )
    assert set(loaded) <= FRONT_MODULES_AN_APP_LOADS, sorted(set(loaded) - FRONT_MODULES_AN_APP_LOADS)


def test_no_front_module_is_longer_than_the_cap() -> None:
    lengths = {path.name: len(path.read_text().splitlines()) for path in sorted(FRONT.glob("*.py"))}
    too_long = {name: n for name, n in lengths.items() if n > LONG_FRONT_MODULES.get(name, FRONT_LINE_CAP)}
    assert not too_long, f"over {FRONT_LINE_CAP} lines (or longer than their recorded debt): {too_long}"
    paid = sorted(name for name in LONG_FRONT_MODULES if lengths.get(name, 0) <= FRONT_LINE_CAP)
    assert not paid, f"now within {FRONT_LINE_CAP} lines: strike from LONG_FRONT_MODULES {paid}"
