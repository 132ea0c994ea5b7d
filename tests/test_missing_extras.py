"""A missing optional extra breaks only what needs it: the demo serves the rest and says, once, what it left out.

Each check runs in a child interpreter where the agent extra's packages cannot be imported (their
`sys.modules` entries are `None`, which makes any import of them fail as if uninstalled), so this
suite's own venv, which has every extra, can test the install that has none. `.ci/fresh_install.sh`
checks the same on a real install without extras.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.processes import child_env

WITHOUT_AGENT_EXTRA = """
import sys
for name in ("pydantic_ai", "openai"):
    sys.modules[name] = None  # as if the agent extra were not installed
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_AGENT_EXTRA + code],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_demo_serves_every_other_tool_and_says_once_that_review_code_needs_the_agent_extra() -> None:
    done = _run(
        """
import json, logging
logging.basicConfig(level="WARNING", format="%(message)s")
from mcp_tasks_temporal.demo import app
from mcp_tasks_temporal.demo.server import tasks
print(json.dumps({"workflow_tools": sorted(tasks.workflow_tools), "app": app.name}))
"""
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"workflow_tools": ["build_pipeline"], "app": "mcp-tasks-temporal-demo"}
    assert done.stderr.splitlines() == [
        'review_code left out: needs the agent extra (pip install "mcp-tasks-temporal[agent]")'
    ]


def test_the_integration_itself_raises_an_import_error_naming_its_extra_and_the_missing_module() -> None:
    done = _run(
        """
import json
from mcp_tasks_temporal.contrib import MissingExtra
try:
    import mcp_tasks_temporal.contrib.pydantic_ai
except MissingExtra as missing:
    print(json.dumps({"extra": missing.extra, "name": missing.name, "import_error": isinstance(missing, ImportError)}))
"""
    )
    assert done.returncode == 0, done.stderr
    raised = json.loads(done.stdout)
    assert (raised["extra"], raised["import_error"]) == ("agent", True)
    assert raised["name"].partition(".")[0] == "pydantic_ai", "the error names the module that is missing"


def test_agent_model_without_the_agent_extra_is_one_line_naming_the_extra() -> None:
    done = _run(
        """
from mcp_tasks_temporal.demo import app
from mcp_tasks_temporal.ops.cli import parse
from mcp_tasks_temporal.ops.server_commands import configure
try:
    configure(app, parse(["dev", "--agent-model", "qwen3"]).settings)
except ValueError as refused:
    print(refused)
"""
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '--agent-model needs the agent extra: pip install "mcp-tasks-temporal[agent]"'
