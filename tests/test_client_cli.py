"""The client commands of the `mcp-tasks-temporal` script against our server (see tests/cli_runs.py).

The server is the fixture app's front and workers in this process, over real HTTP on a loopback port (`front_url`);
the commands run in this process too, but for the tests about the console script itself (its entry point, a stdio
server it starts, a child without a terminal).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.bearer import token_auth
from tests.cli_runs import Run, client_env, run_in_child, run_in_process
from tests.clock import ManualClock
from tests.conftest import OpenFront
from tests.processes import CLI, FIXTURE_APP, REPO_ROOT, child_env, free_port
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

UNKNOWN = "00000000-0000-4000-8000-000000000000"
TOKEN = "cli-token-9b1e77"
SHORT_LIVED_TTL = timedelta(seconds=2)
"""The fixture app's `short_lived` tool's TTL."""


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite3"


@pytest.fixture
def cli(journal: Path) -> Any:
    """Run `mcp-tasks-temporal ARGS...` with stdin (empty unless given); every run is bounded.

    In this process unless `child=True`: the same `main()`, its own streams and environment.
    """

    async def run(*args: str, stdin: str = "", env: dict[str, str] | None = None, child: bool = False) -> Run:
        environment = client_env(MCP_TASKS_JOURNAL=str(journal), **(env or {}))
        runner = run_in_child if child else run_in_process
        return await runner(list(args), stdin=stdin, env=environment)

    return run


async def wait_for_file(path: Path) -> None:
    with anyio.fail_after(30):
        while not path.exists():
            await anyio.sleep(0.02)


async def test_call_prints_the_result_and_a_status_line(cli: Any, front_url: str, journal: Path) -> None:
    run = await cli("call", "double", "--url", front_url, "--args", '{"x": 21}', child=True)  # the console script
    assert run.code == 0, run.err
    assert json.loads(run.out) == {"value": 42}
    assert "completed" in run.err, "the status line shows on stderr"
    scripted = await cli("call", "double", "--url", front_url, "--args", '{"x": 2}', "--json")
    assert scripted.code == 0, scripted.err
    body = scripted.json()
    assert body["status"] == "completed" and body["taskId"]
    assert body["result"]["structuredContent"] == {"value": 4}
    assert (await cli("tasks", "--json")).json() == [], "finished tasks leave the journal"


async def test_call_of_a_sync_tool_prints_its_result(cli: Any, front_url: str) -> None:
    run = await cli("call", "echo", "--url", front_url, "--args", '{"text": "plain"}')
    assert (run.code, run.out) == (0, "plain\n"), run.err
    body = (await cli("call", "echo", "--url", front_url, "--args", '{"text": "x"}', "--json")).json()
    assert body["taskId"] is None and body["result"]["content"][0]["text"] == "x"


async def test_elicitation_is_asked_on_the_terminal_and_answered_from_stdin(cli: Any, front_url: str) -> None:
    run = await cli("call", "greet_someone", "--url", front_url, stdin="Ada\n")
    assert run.code == 0, run.err
    assert run.out == "Hello, Ada!\n"
    assert "What is your name?" in run.err and "input_required" in run.err
    declined = await cli("call", "greet_someone", "--url", front_url, stdin="!decline\n")
    assert declined.code == 1, "a declined question makes the tool report an error"


async def test_detach_then_tasks_then_watch_with_the_server_from_the_journal(
    cli: Any, front_url: str, gate: Path
) -> None:
    started = await cli("call", "gated", "--url", front_url, "--args", json.dumps({"gate": str(gate)}), "--detach")
    assert started.code == 0, started.err
    task_id = started.out.strip()
    assert str(uuid.UUID(task_id)) == task_id
    [entry] = (await cli("tasks", "--json")).json()
    assert (entry["taskId"], entry["tool"], entry["server"]) == (task_id, "gated", front_url)
    assert entry["status"] == "working"
    table = await cli("tasks")
    assert task_id in table.out and "gated" in table.out
    (gate / "release").write_text("1")
    watched = await cli("watch", task_id)
    assert watched.code == 0, watched.err
    assert watched.out == f"released {gate.name}\n"
    assert (await cli("tasks", "--json")).json() == []


async def test_get_answer_and_watch_an_input_request(cli: Any, front_url: str, front_mcp: TaskCalls) -> None:
    started = await cli("call", "greet_someone", "--url", front_url, "--detach", "--json")
    assert started.code == 0, started.err
    task_id = started.json()["taskId"]
    await front_mcp.wait_for(task_id, ["input_required"])
    shown = await cli("get", task_id, "--json")
    assert shown.code == 0, shown.err
    [key] = shown.json()["inputRequests"]
    assert shown.json()["inputRequests"][key]["method"] == "elicitation/create"
    human = await cli("get", task_id)
    assert "input_required" in human.out and key in human.out
    answered = await cli("answer", task_id, key, '{"action": "accept", "content": {"name": "Cli"}}')
    assert answered.code == 0, answered.err
    watched = await cli("watch", task_id, "--json", "--no-input")
    assert watched.code == 0, watched.err
    assert watched.json()["result"]["content"][0]["text"] == "Hello, Cli!"


async def test_cancel_then_watch_reports_the_cancellation(cli: Any, front_url: str, gate: Path) -> None:
    started = await cli("call", "gated", "--url", front_url, "--args", json.dumps({"gate": str(gate)}), "--detach")
    task_id = started.out.strip()
    await wait_for_file(gate / "started")
    cancelled = await cli("cancel", task_id, "--json")
    assert cancelled.code == 0, cancelled.err
    assert {k: v for k, v in cancelled.json().items() if k != "status"} == {"taskId": task_id, "cancelRequested": True}
    watched = await cli("watch", task_id)
    assert watched.code == 4, watched.err
    assert "cancelled" in watched.err


async def test_a_failed_task_exits_3_with_its_json_rpc_code(cli: Any, front_url: str) -> None:
    run = await cli("call", "protocol_error", "--url", front_url, "--args", '{"code": -32042}', "--json")
    assert run.code == 3
    assert run.json()["status"] == "failed" and run.json()["error"]["code"] == -32042
    assert "-32042" in run.err and len(run.err.strip().splitlines()[-1]) < 200
    tool_error = await cli("call", "tool_error", "--url", front_url)
    assert tool_error.code == 1


async def test_unknown_and_expired_ids_are_invalid_params(cli: Any, open_front: OpenFront, gate: Path) -> None:
    clock = ManualClock()
    front = await open_front(clock=clock)
    async with front.listening() as url:
        unknown = await cli("get", UNKNOWN, "--url", url)
        assert unknown.code == 3 and "-32602" in unknown.err
        assert (await cli("cancel", UNKNOWN, "--url", url, "--json")).json()["error"]["code"] == -32602
        not_journaled = await cli("get", UNKNOWN)
        assert not_journaled.code == 2 and "--url" in not_journaled.err

        arguments = json.dumps({"gate": str(gate)})
        task_id = (await cli("call", "short_lived", "--url", url, "--args", arguments, "--detach")).out.strip()
        assert (await cli("get", task_id, "--json")).json()["status"] == "working"
        clock.advance(SHORT_LIVED_TTL)
        expired = await cli("get", task_id, "--url", url, "--json")
        assert expired.code == 3 and expired.json()["error"]["code"] == -32602
        assert (await cli("tasks", "--json")).json() == [], "the journal forgets a task its server no longer knows"


async def test_unreachable_server_exits_6(cli: Any) -> None:
    run = await cli("get", UNKNOWN, "--url", f"http://127.0.0.1:{free_port()}/mcp")
    assert run.code == 6
    assert len(run.err.strip().splitlines()) == 1


async def test_authentication_failure_exits_5_and_a_token_gets_in(cli: Any, open_front: OpenFront) -> None:
    secured = await open_front(auth=token_auth({TOKEN: "cli@example.com"}))
    async with secured.listening() as url:
        refused = await cli("call", "double", "--url", url, "--args", '{"x": 1}', "--json")
        assert refused.code == 5
        assert refused.json()["error"]["httpStatus"] == 401
        assert "401" in refused.err
        allowed = await cli("call", "double", "--url", url, "--args", '{"x": 1}', "--token", TOKEN)
        assert allowed.code == 0, allowed.err
        from_env = await cli("call", "double", "--url", url, "--args", '{"x": 3}', env={"MCP_TASKS_TOKEN": TOKEN})
        assert from_env.code == 0 and json.loads(from_env.out) == {"value": 6}


async def test_the_cli_over_stdio_resumes_with_the_command_from_the_journal(
    cli: Any, temporal: str, app_queue: str, gate: Path
) -> None:
    # The stdio server is the command's child; the module's in-process workers run its tasks.
    serve = [*CLI, "serve", "--transport", "stdio", "--temporal", temporal, "--task-queue", app_queue]
    command = shlex.join([*serve, "--app", FIXTURE_APP])
    # A child: the stdio server's stderr goes to the command's own, a real file.
    run = await cli("call", "double", "--stdio", command, "--args", '{"x": 5}', child=True)
    assert run.code == 0, run.err
    assert json.loads(run.out) == {"value": 10}
    started = await cli(
        "call", "gated", "--stdio", command, "--args", json.dumps({"gate": str(gate)}), "--detach", child=True
    )
    assert started.code == 0, started.err
    task_id = started.out.strip()
    [entry] = (await cli("tasks", "--json")).json()
    assert entry["server"] == f"stdio:{command}"
    (gate / "release").write_text("1")
    watched = await cli("watch", task_id, child=True)
    assert watched.code == 0, watched.err
    assert watched.out == f"released {gate.name}\n"


def assert_one_line(run: Run) -> str:
    """A failed command says why in one line on stderr, never with a traceback."""
    assert "Traceback" not in run.err, run.err
    lines = run.err.strip().splitlines()
    assert lines, "a failed command must say why"
    return lines[-1]


async def test_a_synchronous_is_error_result_is_one_line_and_exit_1(cli: Any, front_url: str) -> None:
    run = await cli("call", "echo", "--url", front_url, "--args", "{}")
    assert run.code == 1, run.err
    assert "Traceback" not in run.err and len(run.err.strip().splitlines()) == 1, run.err
    assert "text" in run.out, "the tool's error text is the result, on stdout"
    scripted = await cli("call", "echo", "--url", front_url, "--args", "{}", "--json")
    assert scripted.code == 1 and scripted.json()["result"]["isError"] is True


async def test_answer_takes_the_tools_own_key_and_refuses_keys_that_are_not_open(
    cli: Any, front_url: str, front_mcp: TaskCalls
) -> None:
    started = await cli("call", "ask_one_midway", "--url", front_url, "--detach")
    assert started.code == 0, started.err
    task_id = started.out.strip()
    await front_mcp.wait_for(task_id, ["input_required"])
    shown = await cli("get", task_id, "--json")
    assert list(shown.json()["inputRequests"]) == ["only"], "the key the tool asked under: request_input('only')"
    assert "needs input only:" in (await cli("get", task_id)).out

    wrong = await cli("answer", task_id, "ask/only", '{"action": "accept", "content": {"approve": true}}')
    assert wrong.code == 2
    line = assert_one_line(wrong)
    assert "'ask/only'" in line and "open: only" in line
    assert (await front_mcp.get(task_id)).result["status"] == "input_required", "nothing was delivered"

    misfit = await cli("answer", task_id, "only", '{"action": "accept", "content": {"approve": "maybe"}}')
    assert misfit.code == 2, misfit.err  # an answer that does not fit its question: usage, as a key not open
    assert "-32602" in assert_one_line(misfit)

    right = await cli("answer", task_id, "only", '{"action": "accept", "content": {"approve": true}}')
    assert right.code == 0, right.err
    done = await front_mcp.wait_for(task_id)
    assert done["result"]["content"][0]["text"] == "accept"
    late = await cli("answer", task_id, "only", '{"action": "decline"}')
    assert late.code == 2 and "no open questions (it is completed)" in assert_one_line(late)


async def test_get_and_watch_still_work_once_the_task_has_finished(cli: Any, front_url: str, journal: Path) -> None:
    started = await cli("call", "double", "--url", front_url, "--args", '{"x": 8}', "--detach")
    task_id = started.out.strip()
    first = await cli("watch", task_id)
    assert (first.code, json.loads(first.out)) == (0, {"value": 16}), first.err
    # The journal still names the server: no --url needed for a finished task within its TTL.
    shown = await cli("get", task_id, "--json")
    assert shown.code == 0, shown.err
    assert shown.json()["status"] == "completed"
    again = await cli("watch", task_id)
    assert (again.code, json.loads(again.out)) == (0, {"value": 16}), again.err
    assert (await cli("tasks", "--json")).json() == [], "the outstanding list holds only unfinished tasks"
    [finished] = (await cli("tasks", "--all", "--json")).json()
    assert (finished["taskId"], finished["status"]) == (task_id, "completed")


async def test_every_exit_status_is_in_the_help(cli: Any) -> None:
    from mcp_tasks_temporal.ops.client_args import (
        EXIT_AUTH,
        EXIT_CANCELLED,
        EXIT_INPUT_REQUIRED,
        EXIT_INTERRUPTED,
        EXIT_PROTOCOL,
        EXIT_TOOL_ERROR,
        EXIT_UNEXPECTED,
        EXIT_UNREACHABLE,
        EXIT_USAGE,
    )

    codes = [
        0,
        EXIT_TOOL_ERROR,
        EXIT_USAGE,
        EXIT_PROTOCOL,
        EXIT_CANCELLED,
        EXIT_AUTH,
        EXIT_UNREACHABLE,
        EXIT_INPUT_REQUIRED,
        EXIT_UNEXPECTED,
        EXIT_INTERRUPTED,
    ]
    for command in ("call", "get", "cancel", "answer", "watch", "tasks"):
        shown = await cli(command, "--help")
        assert shown.code == 0
        lines = shown.out.split("Exit status:", 1)[1].splitlines()
        assert {int(line.split()[0]) for line in lines if line.strip()[:1].isdigit()} >= set(codes), command
    documented = (REPO_ROOT / "docs" / "clients.md").read_text()
    for code in codes:
        assert f"| {code} |" in documented, f"exit status {code} is not in docs/clients.md's table"


async def test_the_status_line_never_goes_backwards(cli: Any, front_url: str) -> None:
    # Not a terminal, so every change the line shows is its own line on stderr.
    run = await cli("call", "numbered_steps", "--url", front_url, stdin="y\n")
    assert run.code == 0, run.err
    assert run.out == "accept after 8 steps\n"
    shown = [int(number) for number in re.findall(r": working - step (\d+)", run.err)]
    assert shown and shown == sorted(shown), f"the status went backwards: {shown}\n{run.err}"
    assert "input_required" in run.err


async def test_cancel_of_a_finished_task_says_so_and_exits_2(cli: Any, front_url: str) -> None:
    started = await cli("call", "double", "--url", front_url, "--args", '{"x": 3}', "--json")
    task_id = started.json()["taskId"]
    late = await cli("cancel", task_id)
    assert late.code == 2, late.err
    assert "already ended (completed)" in assert_one_line(late)
    assert late.out == "", "nothing may claim a cancellation was requested"


async def test_tasks_shows_statuses_changed_elsewhere(
    cli: Any, front_url: str, front_mcp: TaskCalls, gate: Path
) -> None:
    asked = (await cli("call", "ask_one_midway", "--url", front_url, "--detach")).out.strip()
    gated = await cli("call", "gated", "--url", front_url, "--args", json.dumps({"gate": str(gate)}), "--detach")
    gated_id = gated.out.strip()
    await front_mcp.wait_for(asked, ["input_required"])
    await wait_for_file(gate / "started")
    listed = {e["taskId"]: e["status"] for e in (await cli("tasks", "--json")).json()}
    assert listed == {asked: "input_required", gated_id: "working"}, listed

    await front_mcp.update(
        asked, {"only": {"action": "accept", "content": {"approve": True}}}
    )  # another client answers
    await front_mcp.cancel(gated_id)  # and another cancels
    await front_mcp.wait_for(asked)
    await front_mcp.wait_for(gated_id)
    assert (await cli("tasks", "--json")).json() == [], "both ended, whoever ended them"
    ended = {e["taskId"]: e["status"] for e in (await cli("tasks", "--all", "--json")).json()}
    assert ended == {asked: "completed", gated_id: "cancelled"}, ended
    nothing_open = await cli("tasks")
    assert "2 finished: tasks --all" in nothing_open.err, nothing_open.err


async def test_tasks_says_which_statuses_it_could_not_check(cli: Any, open_front: OpenFront) -> None:
    other = await open_front()
    async with other.http() as http:
        async with other.listening() as url:
            asked = (await cli("call", "ask_one_midway", "--url", url, "--detach")).out.strip()
            await other.calls(http).wait_for(asked, ["input_required"])
            assert (await cli("tasks", "--json")).json()[0]["stale"] is False
        # Its server went away; the task lives on in Temporal.
        [entry] = (await cli("tasks", "--json")).json()
        assert entry["status"] == "input_required" and entry["stale"] is True, entry
        assert "input_required (last seen, server unreachable)" in (await cli("tasks")).out
        await other.calls(http).cancel(asked)


async def test_answer_takes_plain_words_where_the_question_has_one_field(
    cli: Any, front_url: str, front_mcp: TaskCalls
) -> None:
    task_id = (await cli("call", "ask_one_midway", "--url", front_url, "--detach")).out.strip()
    await front_mcp.wait_for(task_id, ["input_required"])
    unclear = await cli("answer", task_id, "only", "maybe")
    assert unclear.code == 2
    line = assert_one_line(unclear)
    assert "approve" in line and "JSON is not valid JSON" not in line, line
    assert (await front_mcp.get(task_id)).result["status"] == "input_required"
    said = await cli("answer", task_id, "only", "yes")
    assert said.code == 0, said.err
    done = await front_mcp.wait_for(task_id)
    assert done["result"]["content"][0]["text"] == "accept"
    assert (await cli("tasks", "--all", "--json")).json()[0]["status"] == "completed", "the journal saw the answer"


async def test_call_without_a_terminal_ends_at_a_question_it_cannot_ask_and_says_how_to_answer(
    cli: Any, front_url: str, journal: Path
) -> None:
    """stdin is /dev/null, as under cron, CI or `nohup`: no answer can come, so the command does not wait for one."""
    environment = {**child_env(), "MCP_TASKS_JOURNAL": str(journal)}
    environment.pop("MCP_TASKS_TOKEN", None)
    command = [*CLI, "call", "ask_one_midway", "--url", front_url]
    with anyio.fail_after(60):
        done = await anyio.run_process(command, cwd=REPO_ROOT, env=environment, stdin=subprocess.DEVNULL, check=False)
    err = done.stderr.decode()
    assert done.returncode == 7, err
    assert done.stdout == b""
    [hint] = [line for line in err.splitlines() if "mcp-tasks-temporal answer" in line]
    task_id = re.findall(r"answer (\S+) only", hint)[0]
    assert f"mcp-tasks-temporal watch {task_id}" in hint, hint
    assert (await cli("get", task_id, "--json")).json()["status"] == "input_required", "not cancelled for us"

    # The same from `watch`, and in JSON for a script: the error names the task.
    watched = await cli("watch", task_id, "--json")
    assert watched.code == 7, watched.err
    assert watched.json()["error"]["taskId"] == task_id

    answered = await cli("answer", task_id, "only", "yes")
    assert answered.code == 0, answered.err
    resumed = await cli("watch", task_id)
    assert (resumed.code, resumed.out) == (0, "accept\n"), resumed.err


async def test_no_input_follows_a_task_whose_question_is_answered_elsewhere(
    cli: Any, front_url: str, front_mcp: TaskCalls, journal: Path
) -> None:
    task_id = (await cli("call", "ask_one_midway", "--url", front_url, "--detach")).out.strip()
    await front_mcp.wait_for(task_id, ["input_required"])
    environment = {**child_env(), "MCP_TASKS_JOURNAL": str(journal)}
    environment.pop("MCP_TASKS_TOKEN", None)
    command = [*CLI, "watch", task_id, "--no-input"]
    async with await anyio.open_process(command, cwd=REPO_ROOT, env=environment, stdin=subprocess.DEVNULL) as watch:
        assert watch.stderr is not None and watch.stdout is not None
        err = b""
        with anyio.fail_after(60):
            while f"mcp-tasks-temporal answer {task_id} only".encode() not in err:
                err += await watch.stderr.receive()
        # Answered from elsewhere while `watch --no-input` follows it: never asked on its stdin.
        assert (await cli("answer", task_id, "only", "yes")).code == 0
        with anyio.fail_after(60):
            code = await watch.wait()
            out = b"".join([chunk async for chunk in watch.stdout])
    assert (code, out) == (0, b"accept\n"), err.decode()


def test_every_call_in_the_docs_names_its_server() -> None:
    """`call` starts a task on a server it is told of (`--url` or `--stdio`): a copied command must run as shown."""
    commands = [
        line.strip()
        for page in sorted((REPO_ROOT / "docs").glob("*.md"))
        for line in re.sub(r"\\\n\s*", " ", page.read_text()).splitlines()
        if re.search(r"(^|[\s`$])mcp-tasks-temporal call ", line)
    ]
    assert commands, "the docs show no call: update this test"
    missing = [line for line in commands if "--url" not in line and "--stdio" not in line]
    assert not missing, missing


@pytest.mark.parametrize("reader", ["head -n 1", "true"])
def test_output_to_a_closed_pipe_ends_quietly_as_a_c_tool_does(tmp_path: Path, reader: str) -> None:
    """`| head` (closed after a line) or a reader gone before the first write: no traceback, killed by SIGPIPE."""
    from mcp_tasks_temporal.client import Journal

    journal = Journal(tmp_path / "journal.sqlite3")
    for number in range(3000):  # a listing far larger than a pipe's buffer
        task_id = str(uuid.UUID(int=number, version=4))
        journal.record("http://127.0.0.1:9/mcp", task_id, tool="build", status="completed",
                       created_at="2026-01-01T00:00:00Z", ttl_ms=10**13)  # fmt: skip
    journal.close()
    cli = " ".join(shlex.quote(word) for word in CLI)
    script = f"{cli} tasks --all --journal {shlex.quote(str(tmp_path / 'journal.sqlite3'))} | {reader}"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], cwd=REPO_ROOT, env=child_env(), capture_output=True, timeout=120
    )
    assert done.returncode == 128 + 13, (done.returncode, done.stderr.decode())  # SIGPIPE, as `yes | head`
    assert done.stderr == b"", done.stderr.decode()
