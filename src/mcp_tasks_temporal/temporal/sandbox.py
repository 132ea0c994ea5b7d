"""The workflow sandbox the workers run user workflows in, and what to say when a workflow does not load in it.

Temporal re-imports each workflow's module inside its sandbox for every run,
and everything that module imports with it. An app written in one file
(workflow, activities and `MCPServer` together) therefore imports `mcp` in the
sandbox, which cannot load it: the worker refused to start with `Failed
validating workflow X` and no cause. The workers pass `mcp`, `mcp_types` and
this package through instead (the sandbox uses the worker's own, already
imported modules): workflow code never calls into them, it only shares a
module with a server that does. This package's workflow modules stay
sandboxed, as does the user's module itself, so its module-level state is
still fresh for every run.

What still fails names its cause on one line: the import or the statement in
the workflow's module that the sandbox refused, and the fix.
"""

from __future__ import annotations

import linecache
import pkgutil
import sys
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Final

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from mcp_tasks_temporal.sdk_compat import workflow_definition

_SANDBOXED: Final = frozenset({"temporal.workflows", "demo.pipeline", "demo.review", "contrib", "testing"})
"""This package's own workflows (the demo's too), and the modules they import in the sandbox (the sub-agent), stay
sandboxed."""

_PASSED_THROUGH: Final = ("mcp", "mcp_types", "rich", "beartype")
"""`rich`: an `MCPServer` built at import (a one-file app) sets up logging with it on first use, and its
module init draws random numbers, which the sandbox refuses when it is imported there for the first time.
`beartype`: a package that turns on beartype's import hook (`beartype.claw`; `py-key-value-aio` does, which
FastMCP brings) puts every later import of the process through it, the sandbox's too, and in the sandbox the
hook imported beartype all over again for every workflow run: seven times the CPU of a run's sandbox."""

IMPORT_FIX: Final = (
    "import it inside `with workflow.unsafe.imports_passed_through():`, or keep the workflow in a module of its "
    "own that imports only temporalio, mcp_tasks_temporal.temporal.workflow_api and its dataclasses"
)
STATEMENT_FIX: Final = (
    "a workflow's module runs again in the sandbox for every run, so it must not do I/O, read the clock or "
    "start anything at import: move that into a function, or the workflow into a module of its own"
)


class WorkflowSandboxError(RuntimeError):
    """A workflow the worker was given does not load in Temporal's workflow sandbox."""


def passthrough_modules() -> tuple[str, ...]:
    """`mcp`, `mcp_types` and this package's modules that workflow code may share with the server."""
    package = Path(__file__).resolve().parent.parent  # this package's folder, read without importing its root

    def own(path: Sequence[str], prefix: str) -> list[str]:
        found: list[str] = []
        for module in pkgutil.iter_modules(path):
            name = f"{prefix}{module.name}"
            if name in _SANDBOXED or module.name.startswith("__"):
                continue
            if module.ispkg and any(sandboxed.startswith(f"{name}.") for sandboxed in _SANDBOXED):
                # Pass its modules through one by one, around the one that stays sandboxed.
                found += own([str(Path(package, *name.split(".")))], f"{name}.")
            else:
                found.append(f"mcp_tasks_temporal.{name}")
        return found

    return (*_PASSED_THROUGH, *own([str(package)], ""))


def app_module_passthrough(workflows: Iterable[type]) -> tuple[str, ...]:
    """The third-party packages a one-file app's module imports, for a workflow that lives in the app's module.

    A module that also holds the server imports what the server and the activities need (an HTTP client,
    `uvicorn`), much of which does not load in the sandbox. Its workflow code shares the module, not the
    calls, so those packages are passed through. A workflow in a module of its own keeps the strict sandbox:
    there an import of such a package is a mistake worth stopping the worker for. The standard library and
    the app's own package are never passed through (the sandbox is what keeps them deterministic).
    """
    found: set[str] = set()
    for workflow_class in workflows:
        module = sys.modules.get(workflow_class.__module__)
        if module is None:
            continue
        own = workflow_class.__module__.partition(".")[0]
        tops = {_top_package(value) for value in vars(module).values()} - {None, own}
        if "mcp" not in tops:
            continue
        found |= {top for top in tops if top is not None and top not in sys.stdlib_module_names}
    # This package is passed through module by module (`passthrough_modules`), temporalio by Temporal itself.
    return tuple(sorted(found - {"builtins", "__main__", "mcp_tasks_temporal", "temporalio"}))


def _top_package(value: object) -> str | None:
    if isinstance(value, ModuleType):
        name = value.__name__
    else:
        name = getattr(value, "__module__", None)
        if not isinstance(name, str) or isinstance(value, (str, bytes, int, float)):
            return None
    return name.partition(".")[0]


def workflow_runner(extra_passthrough: Iterable[str] = ()) -> SandboxedWorkflowRunner:
    """Temporal's sandbox, with the server-side modules a one-file app imports passed through."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*passthrough_modules(), *extra_passthrough)
    return SandboxedWorkflowRunner(restrictions=restrictions)


def explain(error: BaseException, workflows: Sequence[type]) -> str | None:
    """One line for a `Failed validating workflow X`: where the sandbox refused, why, and the fix.

    `None` when `error` is not a sandbox validation failure.
    """
    message = str(error)
    if not message.startswith("Failed validating workflow") or error.__cause__ is None:
        return None
    chain = _chain(error.__cause__)
    root = chain[-1]
    said = " ".join(str(root).split()).split(". ")[0].rstrip(".")
    reason = f"{type(root).__name__}: {said or 'no message'}"
    name = message.removeprefix("Failed validating workflow").strip()
    where = _statement_in_workflow_module(chain, [w for w in workflows if _named(w, name)] or list(workflows))
    if where is None:
        sandbox = "it does not load in Temporal's workflow sandbox"
        return f"Failed validating workflow {name}: {sandbox} ({reason}); fix: {IMPORT_FIX}"
    location, statement = where
    fix = IMPORT_FIX if statement.startswith(("import ", "from ")) else STATEMENT_FIX
    return (
        f"Failed validating workflow {name}: its module does not load in Temporal's workflow sandbox: "
        f"{location} `{statement}` ({reason}); fix: {fix}"
    )


def _named(workflow_class: type, name: str) -> bool:
    try:
        return workflow_definition(workflow_class).name == name
    except ValueError:
        return workflow_class.__name__ == name


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and its causes, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _statement_in_workflow_module(chain: Sequence[BaseException], workflows: Sequence[type]) -> tuple[str, str] | None:
    """`file:line` and the statement of the deepest frame in a workflow's own module: what failed."""
    files = {_module_file(w) for w in workflows} - {None}
    for error in chain:
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename in files]
        if frames:
            frame = frames[-1]
            statement = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
            return f"{_short(frame.filename)}:{frame.lineno}", statement
    return None


def _module_file(workflow_class: type) -> str | None:
    module = sys.modules.get(workflow_class.__module__)
    path = getattr(module, "__file__", None)
    return str(Path(path).resolve()) if path else None


def _short(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
