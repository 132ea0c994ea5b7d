"""`--app MODULE:ATTR` imports from the current directory, and a bad one is one line and exit status 2.

What a bad `--app` says is `load_app`'s, checked in this process; the console script serving an app
next to the current directory, and stopping on that line with exit status 2, are checked as processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tasks_temporal.ops.app_loading import load_app
from tests.processes import Process, wait_until

# The installed console script, not `python -m`, which would put the current directory on the path by itself.
SCRIPT = str(Path(sys.executable).parent / "mcp-tasks-temporal")

APP_SOURCE = """
from mcp.server.mcpserver import MCPServer
from mcp_tasks_temporal import TasksExtension

tasks = TasksExtension()
app = MCPServer("beside-the-cwd", extensions=[tasks])

@tasks.tool()
@app.tool()
async def hello() -> str:
    return "hello"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A directory with an uninstalled package in it, as a user's checkout would be."""
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text(APP_SOURCE)
    (package / "broken.py").write_text("import json\nraise RuntimeError('config file missing')\n")
    (package / "needs.py").write_text("import not_installed_dependency_xyz\n")
    return tmp_path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MCP_TASKS_APP")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, *args], cwd=project, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_app_next_to_the_current_directory_is_served(project: Path, temporal: str) -> None:
    command = [SCRIPT, "worker", "--temporal", temporal, "--app", "mypkg.server:app"]
    log = project / "worker.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(command, cwd=project, env=_env(), stdout=out, stderr=out, start_new_session=True)
    worker = Process("worker", command, log)
    worker.popen = popen
    try:
        wait_until(lambda: "mcp-tasks-temporal worker:" in worker.log() or not worker.alive, timeout=60, what="worker")
        assert worker.alive, worker.log()
        assert "mcp-tasks/beside-the-cwd" in worker.log()
    finally:
        worker.stop()


@pytest.fixture
def in_project(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process in `project`, as the console script started there: what `load_app` imports from it is
    forgotten after the test, and so is the directory it put on the path."""
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield project
    for name in [name for name in sys.modules if name.split(".")[0] in ("mypkg", "nopkg")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("nopkg.server:app", ["nopkg", "run from the directory that contains nopkg/"]),
        ("mypkg.missing:app", ["mypkg.missing"]),
        ("mypkg.server:nothing", ["mypkg.server", "'nothing'"]),
        ("mypkg.server:tasks", ["mypkg.server.tasks", "not an mcp MCPServer"]),
        ("mypkg.server", ["MODULE:ATTR"]),
        ("mypkg.broken:app", ["mypkg.broken", "RuntimeError", "config file missing"]),
        ("mypkg.needs:app", ["mypkg.needs", "not_installed_dependency_xyz"]),
    ],
)
def test_a_bad_app_is_one_line_naming_what_is_wrong(in_project: Path, spec: str, names: list[str]) -> None:
    with pytest.raises(ValueError) as refused:  # the commands print it as it is, and exit with status 2
        load_app(spec)
    line = str(refused.value)
    assert "\n" not in line and "Traceback" not in line, line
    for name in names:
        assert name in line, line


def test_the_app_next_to_the_current_directory_is_found_first(in_project: Path) -> None:
    assert load_app("mypkg.server:app").name == "beside-the-cwd"


def test_a_bad_app_stops_the_command_on_its_one_line_with_exit_status_2(project: Path) -> None:
    result = _run(project, "worker", "--temporal", "127.0.0.1:1", "--app", "mypkg.broken:app")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("mcp-tasks-temporal: ") and "config file missing" in lines[0], lines[0]


def test_a_sealed_request_state_lives_a_day_with_shared_keys_or_without() -> None:
    from mcp.server.mcpserver import MCPServer

    from mcp_tasks_temporal.front.request_state import REQUEST_STATE_TTL_S, request_state_security

    app = MCPServer("ttl-check")
    # A person answers a question inside a plain call hours later: not the SDK's ten minutes.
    assert REQUEST_STATE_TTL_S == 24 * 60 * 60
    assert request_state_security(app, []).ttl == REQUEST_STATE_TTL_S
    assert request_state_security(app, ["k" * 43]).ttl == REQUEST_STATE_TTL_S
