"""The public surface: what the package root exports and what the docs tell users to import.

The root's `__all__` is pinned here, so adding or removing a public name is a deliberate change of this
test. Every `from mcp_tasks_temporal... import ...` in README.md and docs/*.md must import from the root or a
public submodule, and only names in its `__all__`; the demo's modules are examples and may be imported as
such.
"""

from __future__ import annotations

import importlib
import re
import sys

import pytest

import mcp_tasks_temporal
from tests.processes import REPO_ROOT

ROOT_EXPORTS = [
    "ActivityPolicy",
    "BearerAuth",
    "FrontSettings",
    "FailingWorkflowPolicy",
    "McpTasksPlugin",
    "OwnerKeying",
    "TaskPolicy",
    "TasksExtension",
    "ToolTaskOptions",
    "__version__",
    "mcp_endpoint",
    "idempotency_key",
    "request_input",
    "request_inputs",
    "set_status",
    "start_task_workflow",
    "task_error",
]
PUBLIC_MODULES = ("mcp_tasks_temporal", "mcp_tasks_temporal.client", "mcp_tasks_temporal.contrib.pydantic_ai")
EXAMPLES = "mcp_tasks_temporal.demo"
"""The demo: example code the docs point at (`--app`, the Nexus team's workflow), importable as it is."""

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
_IMPORT = re.compile(r"^\s*from (?P<module>mcp_tasks_temporal[\w.]*) import (?P<names>\([^)]*\)|[^\n]+)", re.M)
_MENTION = re.compile(r"`(?P<path>mcp_tasks_temporal(?:\.\w+)+)(?::(?P<attr>\w+))?")


def doc_imports() -> list[tuple[str, str, list[str]]]:
    """(where, module, names) of every import from this package that the docs show."""
    found: list[tuple[str, str, list[str]]] = []
    for doc in DOCS:
        text = doc.read_text()
        for match in _IMPORT.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            listed = ",".join(line.split("#")[0] for line in match["names"].splitlines()).strip().strip("()")
            names = [part.split(" as ")[0].strip() for part in listed.split(",")]
            found.append((f"{doc.relative_to(REPO_ROOT)}:{line}", match["module"], [n for n in names if n]))
    return found


def test_the_root_exports_exactly_the_pinned_names_and_each_resolves() -> None:
    assert sorted(mcp_tasks_temporal.__all__) == sorted(ROOT_EXPORTS)
    for name in ROOT_EXPORTS:
        assert getattr(mcp_tasks_temporal, name) is not None, name
    with pytest.raises(AttributeError):
        _ = mcp_tasks_temporal.no_such_name  # pyright: ignore[reportAttributeAccessIssue]


def test_every_import_the_docs_show_is_from_a_public_module_and_in_its_all() -> None:
    imports = doc_imports()
    assert any(module == "mcp_tasks_temporal" for _, module, _ in imports), "the docs import from the root"
    for where, module_name, names in imports:
        module = importlib.import_module(module_name)
        if module_name == EXAMPLES or module_name.startswith(f"{EXAMPLES}."):
            missing = [name for name in names if not hasattr(module, name)]
            assert not missing, f"{where}: {module_name} has no {missing}"
            continue
        assert module_name in PUBLIC_MODULES, (
            f"{where}: the docs import from {module_name}, which is not public: export what they need from "
            f"one of {PUBLIC_MODULES}"
        )
        public: list[str] = getattr(module, "__all__", [])
        unlisted = [name for name in names if name not in public]
        assert not unlisted, f"{where}: {unlisted} not in {module_name}.__all__"


def test_every_module_the_docs_name_exists() -> None:
    for doc in DOCS:
        text = doc.read_text()
        for match in _MENTION.finditer(text):
            where = f"{doc.relative_to(REPO_ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
            path = match["path"]
            module_name, attribute = path, match["attr"]
            while module_name not in sys.modules:
                try:
                    importlib.import_module(module_name)
                except ModuleNotFoundError:
                    module_name, _, last = module_name.rpartition(".")
                    attribute = last  # `module.name`: an attribute of the module before it
                    continue
                break
            if attribute is not None:
                assert hasattr(sys.modules[module_name], attribute), f"{where}: {module_name} has no {attribute}"
