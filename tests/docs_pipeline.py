"""docs/workflows.md's pipeline, its three modules written out as the page prints them.

Tests that need the page's own code (not a copy that could drift from it) write it into a
folder of their own and put that folder on the children's PYTHONPATH, or on this process's
path under a package name of its own (`package=`), so that several variants load side by side
in one process; a variant changes one thing of it, as a developer editing the page's workflow would.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tests.processes import REPO_ROOT, child_env

APP = "myteam.server:app"
FILES = ("myteam/activities.py", "myteam/workflows.py", "myteam/server.py")
FIRST_STEP = 'set_status("building")'


def docs_pipeline(
    folder: Path,
    change_workflow: Callable[[str], str] | None = None,
    *,
    versioning: str | None = None,
    failing_workflow: str | None = None,
    package: str = "myteam",
) -> dict[str, str]:
    """The page's pipeline under `folder`; the env to import it.

    `change_workflow` edits its workflow module; `versioning` is given to `workflow_tool` (docs/operations.md),
    `failing_workflow` (the source of a `FailingWorkflowPolicy`) to the app's `TasksExtension`. `package`
    renames the page's `myteam` (its app is then `{package}.server:app`).
    """
    page = (REPO_ROOT / "docs" / "workflows.md").read_text()
    (folder / package).mkdir(parents=True)
    (folder / package / "__init__.py").write_text("")
    for name in FILES:
        [block] = [b for b in page.split("```python\n") if b.startswith(f"# {name}")]
        source = block.split("```")[0].replace("myteam.", f"{package}.")
        if change_workflow is not None and name.endswith("workflows.py"):
            assert FIRST_STEP in source, "the page's pipeline changed: update its variants here"
            source = change_workflow(source)
        if versioning is not None and name.endswith("server.py"):
            registration = "activities=[build, deploy])"
            assert registration in source, "the page's server changed: update the versioning variant here"
            source = source.replace(registration, f"activities=[build, deploy], versioning={versioning!r})")
        if failing_workflow is not None and name.endswith("server.py"):
            extension = "tasks = TasksExtension()"
            assert extension in source, "the page's server changed: update the failing-workflow variant here"
            source = "from mcp_tasks_temporal import FailingWorkflowPolicy\n" + source.replace(
                extension, f"tasks = TasksExtension(default_failing_workflow={failing_workflow})"
            )
        (folder / package / name.removeprefix("myteam/")).write_text(source)
    return {"PYTHONPATH": os.pathsep.join([str(folder), child_env()["PYTHONPATH"]])}


def before_first_step(line: str) -> Callable[[str], str]:
    """A variant that runs `line` in the workflow before its first status line."""
    return lambda source: source.replace(FIRST_STEP, f"{line}\n        {FIRST_STEP}", 1)


def after_first_step(line: str) -> Callable[[str], str]:
    """A variant that runs `line` in the workflow right after its first status line."""
    return lambda source: source.replace(FIRST_STEP, f"{FIRST_STEP}\n        {line}", 1)


deploy_first = after_first_step(
    "await workflow.execute_activity(deploy, request.ref, start_to_close_timeout=timedelta(hours=1))"
)
"""The careless reorder: deploy before the build."""

DEPLOYING_STEP = 'set_status("deploying")'


def without_deploying_status(source: str) -> str:
    """A status line dropped: the deploy activity now comes where the history recorded the status change."""
    assert DEPLOYING_STEP in source, "the page's pipeline changed: update its variants here"
    return source.replace(f"        {DEPLOYING_STEP}\n", "", 1)


clock_read = before_first_step('__import__("datetime").datetime.now()')
"""A sandbox violation: the wall clock read in workflow code."""

planted_bug = before_first_step('request.__dict__["no such field"]')
"""An exception in workflow code: a `KeyError`, as a typo in a field name gives."""
