"""The boundaries docs/design.md draws, checked on every run rather than trusted to prose.

import-linter's contracts (pyproject.toml, `[tool.importlinter]`) keep the layers apart, chains
included; the checks below cover what those contracts do not say: where environment variables are
read, where third-party private names are touched, what a worker loads of the front, and that no
import (type-only and function-level ones included) closes a cycle.
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Generator
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

from tests.processes import REPO_ROOT, child_env

PACKAGE = REPO_ROOT / "src" / "mcp_tasks_temporal"
SETTINGS = PACKAGE / "ops" / "settings" / "environment.py"
SDK_COMPAT = PACKAGE / "sdk_compat.py"

FRONT_MODULES_AN_APP_LOADS = frozenset(
    {
        # What `from mcp_tasks_temporal import TasksExtension` and building the app load of front/: the facade
        # and its methods' params. A worker loading the app stops there.
        "mcp_tasks_temporal.front",
        "mcp_tasks_temporal.front.extension",
        "mcp_tasks_temporal.front.task_params",
    }
)


def _sources() -> list[Path]:
    # workflows/ and activities/ are linked into temporal/: resolve() keeps each file once.
    return sorted({path.resolve() for path in PACKAGE.rglob("*.py")})


@contextlib.contextmanager
def loggers_left_as_they_were() -> Generator[None]:
    """Undo a `logging.config.dictConfig` run inside the block: it disables every logger that existed before it,
    and the tests that follow in this process would no longer see this project's log lines (`caplog`)."""
    manager = logging.Logger.manager
    before = {
        name: (logger.disabled, logger.level, list(logger.handlers), logger.propagate)
        for name, logger in manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    try:
        yield
    finally:
        for name, logger in list(manager.loggerDict.items()):
            if not isinstance(logger, logging.Logger):
                continue
            if name in before:
                logger.disabled, logger.level, handlers, logger.propagate = before[name]
                logger.handlers[:] = handlers
            else:
                logger.handlers.clear()
                logger.propagate = True


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    # `lint-imports --no-cache`, run here: it reads pyproject.toml and builds the graph from the sources.
    with loggers_left_as_they_were():
        status = lint_imports(config_filename=str(REPO_ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    report = capsys.readouterr()
    assert status == 0, report.out[-6000:] + report.err[-2000:]


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


def _import_cycles() -> list[list[str]]:
    """The package's import cycles, each a strongly connected set of modules; type-only and lazy imports count."""
    graph = grimp.build_graph(
        "mcp_tasks_temporal", include_external_packages=False, exclude_type_checking_imports=False
    )
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            members: list[str] = []
            while not members or members[-1] != module:
                members.append(stack.pop())
            if len(members) > 1:
                cycles.append(sorted(members))

    for module in sorted(graph.modules):
        if module not in order:
            visit(module)
    return cycles


def test_no_module_of_the_package_is_part_of_an_import_cycle() -> None:
    cycles = _import_cycles()
    assert not cycles, f"import cycles (break them by dependency direction: pass what a part needs): {cycles}"
