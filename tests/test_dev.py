"""`mcp-tasks-temporal dev`: one command, state kept in its directory across restarts, Ctrl-C stops everything."""

from __future__ import annotations

import os
import re
import select
import shlex
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcp_tasks_temporal.ops.dev.worker_process import SupervisedWorker
from tests.processes import CLI, REPO_ROOT, Process, child_env, free_port, start_worker, wait_until
from tests.test_rolling_deploy import ELICIT, SHIP
from tests.wire import HttpMcp, TaskCalls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def start_dev(
    tmp_path: Path,
    state: Path,
    port: int,
    temporal_port: int,
    *,
    extra: list[str] | None = None,
    app: str = "tests.fixture_app:app",
    env: dict[str, str] | None = None,
) -> Process:
    command = [*CLI, "dev", "--app", app, "--state-dir", str(state), "--port", str(port)]
    command += ["--temporal-port", str(temporal_port), "--ui-port", "0", *(extra or [])]
    process = Process(f"dev-{port}", command, tmp_path / f"dev-{port}-{free_port()}.log", env).start()
    wait_until(lambda: "Press Ctrl-C to stop." in process.log() or not process.alive, timeout=60, what="dev")
    assert process.alive, process.log()
    return process


async def test_tasks_survive_a_dev_restart_and_ctrl_c_stops_all_three(
    tmp_path: Path, http: httpx.AsyncClient, gate: Path
) -> None:
    state, port, temporal_port = tmp_path / "state", free_port(), free_port()
    state.mkdir()
    state.chmod(0o755)  # made readable by others before: dev takes that back
    dev = start_dev(tmp_path, state, port, temporal_port)
    mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
    with anyio.fail_after(30):
        while True:
            try:
                finished = await mcp.start("double", {"x": 9})
                break
            except httpx.TransportError:  # the banner is printed just before uvicorn binds
                await anyio.sleep(0.1)
    await mcp.wait_for(finished["taskId"])
    running = await mcp.start("gated", {"gate": str(gate)})
    await mcp.wait_for(running["taskId"], lambda t: t.get("statusMessage") is not None)

    worker = worker_pid(dev)
    dev.stop(signal.SIGINT, timeout=30)
    assert dev.popen.returncode == 0, dev.log()
    assert "stopping" in dev.log()
    assert gone(worker), "the worker process must be gone too"
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", temporal_port)) != 0, "the embedded Temporal server must be gone too"
    assert (state / "temporal.db").exists()
    # Every task's history is in there: the owner's alone.
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for name in ("temporal.db", "temporal.log"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600, name

    dev = start_dev(tmp_path, state, port, temporal_port)
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    done = (await mcp.get(finished["taskId"])).result
                    break
                except httpx.TransportError:
                    await anyio.sleep(0.1)
        assert done["status"] == "completed" and done["result"]["structuredContent"] == {"value": 18}
        (gate / "release").write_text("1")
        resumed: dict[str, Any] = await mcp.wait_for(running["taskId"], timeout=30)
        assert resumed["status"] == "completed"
    finally:
        dev.stop(signal.SIGINT, timeout=30)


def _dev_command(state: Path, port: int, temporal_port: int, ui_port: int = 0) -> list[str]:
    command = [*CLI, "dev", "--app", "tests.fixture_app:app", "--state-dir", str(state), "--port", str(port)]
    return [*command, "--temporal-port", str(temporal_port), "--ui-port", str(ui_port)]


def _refused(tmp_path: Path, command: list[str]) -> tuple[str, str]:
    """Run a `dev` that must refuse to start: exit status 2, no banner, one line on stderr."""
    started = time.monotonic()
    result = subprocess.run(
        command, cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120, check=False
    )
    print(f"refused in {time.monotonic() - started:.1f}s")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == "", "nothing may be printed as if it had started"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0], result.stdout


@pytest.mark.parametrize("flag", ["--port", "--temporal-port", "--ui-port"])
def test_a_taken_port_stops_dev_before_it_prints_anything(tmp_path: Path, flag: str) -> None:
    ports = {"--port": free_port(), "--temporal-port": free_port(), "--ui-port": free_port()}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports[flag]))
        taken.listen()
        line, _ = _refused(
            tmp_path, _dev_command(tmp_path / "state", ports["--port"], ports["--temporal-port"], ports["--ui-port"])
        )
    assert str(ports[flag]) in line and flag in line, line
    assert not (tmp_path / "state" / "temporal.db").exists(), "no Temporal server may have started"


def test_dev_never_uses_another_instances_temporal(tmp_path: Path, temporal: str) -> None:
    """Only --port changed: the Temporal port is the running one's, so this dev must stop, not share it."""
    line, _ = _refused(tmp_path, _dev_command(tmp_path / "second", free_port(), int(temporal.rsplit(":", 1)[1])))
    assert temporal.rsplit(":", 1)[1] in line and "--temporal-port" in line, line


def test_two_devs_never_share_a_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = start_dev(tmp_path, state, free_port(), free_port())
    try:
        line, _ = _refused(tmp_path, _dev_command(state, free_port(), free_port()))
        assert str(state) in line and "--state-dir" in line, line
        assert first.alive
    finally:
        first.stop(signal.SIGINT, timeout=30)


def worker_pid(dev: Process) -> int:
    """The pid `dev`'s banner gives its worker, which must be `dev`'s own child."""
    [pid] = [int(found) for found in re.findall(r"Worker +pid (\d+),", dev.log())]
    children = subprocess.check_output(["pgrep", "-P", str(dev.popen.pid)]).split()
    assert str(pid).encode() in children, dev.log()
    return pid


def gone(pid: int) -> bool:
    """No such process, or only its zombie (a container's init may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def temporal_pid(dev: Process) -> int:
    """The pid of `dev`'s Temporal server, which must be `dev`'s own child."""
    [pid] = [
        int(pid) for pid in subprocess.check_output(["pgrep", "-P", str(dev.popen.pid), "-f", "start-dev"]).split()
    ]
    return pid


def port_closed(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


async def start_task(mcp: TaskCalls, tool: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Start a task on a `dev` that has just printed its banner (uvicorn binds right after it)."""
    with anyio.fail_after(30):
        while True:
            try:
                return await mcp.start(tool, arguments, **kw)
            except httpx.TransportError:
                await anyio.sleep(0.1)


async def test_kill_9_of_dev_stops_its_worker_and_temporal_and_a_restart_loses_nothing(
    tmp_path: Path, http: httpx.AsyncClient, gate: Path
) -> None:
    state, port, temporal_port = tmp_path / "state", free_port(), free_port()
    dev = start_dev(tmp_path, state, port, temporal_port, extra=["--heartbeat-timeout", "2"])
    mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
    running = await start_task(mcp, "gated", {"gate": str(gate)})
    await mcp.wait_for(running["taskId"], lambda t: t.get("statusMessage") is not None)
    worker, server = worker_pid(dev), temporal_pid(dev)

    dev.stop(signal.SIGKILL)
    started = time.monotonic()
    # The worker does not drain the running tool against a Temporal that is gone (ORPHANED_EXIT_S).
    wait_until(lambda: gone(worker) and gone(server), timeout=15, what="dev's children to end with it")
    print(f"worker and Temporal gone {time.monotonic() - started:.1f}s after dev was killed")
    assert port_closed(temporal_port)

    dev = start_dev(tmp_path, state, port, temporal_port, extra=["--heartbeat-timeout", "2"])
    try:
        (gate / "release").write_text("1")
        resumed: dict[str, Any] = await mcp.wait_for(running["taskId"], timeout=30)
        assert resumed["status"] == "completed", resumed
    finally:
        dev.stop(signal.SIGINT, timeout=30)
    assert "left running" not in dev.log(), "nothing may have survived the first dev"


def _leave_a_survivor(state: Path, temporal_port: int, log: Path) -> int:
    """What a `dev` killed before the kernel could stop its server leaves: the server, holding the lock.

    A helper process takes the lock as `dev` does, starts the server with the lock, unwrapped, and exits.
    """
    script = f"""
import subprocess, sys
from pathlib import Path
from mcp_tasks_temporal.ops.dev.embedded_temporal import dev_server_command
from mcp_tasks_temporal.ops.dev.state_dir import state_dir_lock
state = Path({str(state)!r})
with state_dir_lock(state) as lock:
    command = dev_server_command(host="127.0.0.1", port={temporal_port}, ui_port=None,
                                 db_path=state / "temporal.db", namespaces=["default"])
    log = open({str(log)!r}, "ab")
    server = subprocess.Popen(command, stdout=log, stderr=log, pass_fds=(lock.fd,), start_new_session=True)
    lock.record(temporal_pid=server.pid)
    print(server.pid)
"""
    output = subprocess.check_output([sys.executable, "-c", script], cwd=REPO_ROOT, env=child_env(), timeout=60)
    return int(output.split()[-1])


def test_a_restart_replaces_a_temporal_server_a_killed_dev_left_running(tmp_path: Path) -> None:
    state, temporal_port = tmp_path / "state", free_port()
    survivor = _leave_a_survivor(state, temporal_port, tmp_path / "survivor.log")
    try:
        # Start-up under load; a server that died instead fails at once.
        wait_until(lambda: not port_closed(temporal_port) or gone(survivor), timeout=60, what="the left-behind server")
        assert not gone(survivor), (tmp_path / "survivor.log").read_text()
        dev = start_dev(tmp_path, state, free_port(), temporal_port)
        try:
            assert f"stopping the Temporal server (pid {survivor})" in dev.log(), dev.log()
            assert gone(survivor)
            assert temporal_pid(dev) != survivor
        finally:
            dev.stop(signal.SIGINT, timeout=30)
    finally:
        if not gone(survivor):
            os.kill(survivor, signal.SIGKILL)


def test_a_live_dev_is_never_replaced(tmp_path: Path) -> None:
    """The lock's holder is alive: a second `dev` on the same ports is refused, and the first keeps its server."""
    state, port, temporal_port = tmp_path / "state", free_port(), free_port()
    first = start_dev(tmp_path, state, port, temporal_port)
    try:
        server = temporal_pid(first)
        line, _ = _refused(tmp_path, _dev_command(state, port, temporal_port))
        assert str(state) in line and "--state-dir" in line, line
        assert not gone(server) and first.alive
    finally:
        first.stop(signal.SIGINT, timeout=30)


async def test_dev_restarts_a_worker_that_dies_and_its_tasks_carry_on(
    tmp_path: Path, http: httpx.AsyncClient, gate: Path
) -> None:
    port = free_port()
    dev = start_dev(tmp_path, tmp_path / "state", port, free_port(), extra=["--heartbeat-timeout", "2"])
    mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
    try:
        running = await start_task(mcp, "gated", {"gate": str(gate)})
        await mcp.wait_for(running["taskId"], lambda t: t.get("statusMessage") is not None)
        first = worker_pid(dev)
        os.kill(first, signal.SIGKILL)
        # A generous bound for the new worker's start-up under load; a `dev` that stops instead fails at once.
        wait_until(lambda: "restarted it" in dev.log() or not dev.alive, timeout=90, what="the worker's restart")
        assert dev.alive, dev.log()
        [line] = [line for line in dev.log().splitlines() if "restarted it" in line]
        assert "worker was killed by signal 9" in line and "worker.log" in line, dev.log()
        assert dev.alive and (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200
        (gate / "release").write_text("1")
        done: dict[str, Any] = await mcp.wait_for(running["taskId"], timeout=30)
        assert done["status"] == "completed", done
        assert "Traceback" not in dev.log()
    finally:
        dev.stop(signal.SIGINT, timeout=30)
    assert dev.popen.returncode == 0, dev.log()


def test_dev_stops_with_one_line_when_its_worker_keeps_dying(tmp_path: Path) -> None:
    dev = start_dev(tmp_path, tmp_path / "state", free_port(), free_port())
    try:
        for restarts in range(SupervisedWorker.MAX_RESTARTS):
            os.kill(current_worker_pid(dev), signal.SIGKILL)
            wait_until(
                lambda restarts=restarts: dev.log().count("restarted it") > restarts or not dev.alive,
                timeout=90,
                what="the worker's restart",
            )
        os.kill(current_worker_pid(dev), signal.SIGKILL)
        # It stops at once: a restart past the limit fails here as soon as its line is written.
        wait_until(
            lambda: not dev.alive or dev.log().count("restarted it") > SupervisedWorker.MAX_RESTARTS,
            timeout=30,
            what="dev to stop",
        )
        assert dev.log().count("restarted it") == SupervisedWorker.MAX_RESTARTS, dev.log()
        dev.popen.wait(timeout=10)
        assert dev.popen.returncode == 2, dev.log()
        last = dev.log().strip().splitlines()[-1]
        assert "worker was killed by signal 9" in last and "worker.log" in last, dev.log()
        assert "Traceback" not in dev.log()
    finally:
        dev.stop(signal.SIGKILL)


def current_worker_pid(dev: Process) -> int:
    """The worker's pid from the banner or the last restart line."""
    return int(re.findall(r"(?:Worker +pid|restarted it \(pid) (\d+)", dev.log())[-1])


async def test_dev_stops_when_its_temporal_server_dies_and_a_restart_loses_nothing(
    tmp_path: Path, http: httpx.AsyncClient, gate: Path
) -> None:
    state, port, temporal_port = tmp_path / "state", free_port(), free_port()
    dev = start_dev(tmp_path, state, port, temporal_port)
    mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
    try:
        finished = await start_task(mcp, "double", {"x": 4})
        await mcp.wait_for(finished["taskId"])
        running = await start_task(mcp, "gated", {"gate": str(gate)})
        await mcp.wait_for(running["taskId"], lambda t: t.get("statusMessage") is not None)
        worker = worker_pid(dev)
        os.kill(temporal_pid(dev), signal.SIGKILL)
        started = time.monotonic()
        # A running tool is not drained for --graceful-shutdown against a Temporal that is gone.
        dev.popen.wait(timeout=15)
        print(f"dev stopped {time.monotonic() - started:.1f}s after its Temporal server died")
        assert dev.popen.returncode == 2, dev.log()
        last = dev.log().strip().splitlines()[-1]
        assert "embedded Temporal server exited" in last and "temporal.log" in last, dev.log()
        assert "Traceback" not in dev.log()
        assert gone(worker)
    finally:
        dev.stop(signal.SIGKILL)
    dev = start_dev(tmp_path, state, port, temporal_port)
    try:
        done = (await mcp.get(finished["taskId"])).result
        assert done["status"] == "completed" and done["result"]["structuredContent"] == {"value": 8}
    finally:
        dev.stop(signal.SIGINT, timeout=30)


async def test_dev_restarted_as_a_new_build_names_the_pinned_tasks_its_last_build_left(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    state, port, temporal_port = tmp_path / "state", free_port(), free_port()
    as_build = ["--deployment-name", "devapp", "--build-id"]
    dev = start_dev(tmp_path, state, port, temporal_port, app="tests.rolling_app:v1", extra=[*as_build, "1"])
    mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
    try:
        waiting = (await start_task(mcp, "gate", {}, capabilities=ELICIT))["taskId"]  # a pinned workflow tool
        await mcp.wait_for(waiting, lambda task: task["status"] == "input_required")
    finally:
        dev.stop(signal.SIGINT, timeout=30)

    dev = start_dev(tmp_path, state, port, temporal_port, app="tests.rolling_app:v2", extra=[*as_build, "2"])
    worker: Process | None = None
    try:
        banner = dev.log()
        warning = next((line for line in banner.splitlines() if line.startswith("  Other builds")), banner)
        assert "pinned tasks still run on devapp:1 (1);" in warning, warning
        assert "--deployment-name devapp --build-id 1)" in warning
        # What the line says to do, word for word: a worker of build 1 beside dev with dev's payload
        # storage (one without it is refused), and the task finishes on release 1's code.
        command = shlex.split(warning[warning.index("(mcp-tasks-temporal worker ") + 1 : -1])
        assert command[command.index("--payload-storage") + 1] == "local", command
        command[command.index("--app") + 1] = "tests.rolling_app:v1"  # release 1's checkout
        with pytest.raises(RuntimeError, match="payload storage"):
            start_worker(
                tmp_path,
                f"127.0.0.1:{temporal_port}",
                "mcp-tasks/rolling-app",
                app="tests.rolling_app:v1",
                extra=[*as_build, "1"],
            )
        worker = Process("worker-build-1", [*CLI, *command[1:]], tmp_path / "worker-build-1.log").start()
        wait_until(lambda: "mcp-tasks-temporal worker:" in worker.log(), timeout=60, what="build 1's worker")
        await mcp.update(waiting, {"ship": SHIP})
        done = await mcp.wait_for(waiting, timeout=30)
        assert done["result"]["structuredContent"] == {"release": "1", "action": "accept"}, done
        fresh = (await mcp.start("gate", {}, capabilities=ELICIT))["taskId"]
        asked = await mcp.wait_for(fresh, lambda task: task["status"] == "input_required")
        assert set(asked["inputRequests"]) == {"really"}, "new tasks run on the current build, 2"
    finally:
        if worker is not None:
            worker.stop()
        dev.stop(signal.SIGINT, timeout=30)


def _temporal_started(state: Path) -> bool:
    return (state / "temporal.log").exists()


def _worker_starting(state: Path) -> bool:
    return (state / "worker.log").exists()


@pytest.mark.parametrize("phase", ["imports", "temporal", "worker"])
def test_the_first_ctrl_c_stops_dev_at_any_point_of_its_start(tmp_path: Path, phase: str) -> None:
    """Ctrl-C typed in the terminal (a pty: SIGINT to the foreground group), once, while `dev` is still starting."""
    import pty

    state = tmp_path / "state"
    command = [*CLI, "dev", "--app", "tests.fixture_app:app", "--state-dir", str(state), "--port", str(free_port())]
    command += ["--temporal-port", str(free_port()), "--ui-port", "0"]
    env = child_env()
    pid, terminal = pty.fork()
    if pid == 0:  # the child: `dev` on the pty, as a user's shell starts it
        # A shell starts a command with every signal unblocked and at its default; this worker process may
        # have blocked or ignored some (an exec keeps both), and then the Ctrl-C would never arrive.
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.chdir(REPO_ROOT)
        os.execve(command[0], command, env)
    output = bytearray()

    def read() -> None:
        while True:
            ready, _, _ = select.select([terminal], [], [], 0)
            if not ready:
                return
            try:
                chunk = os.read(terminal, 65536)
            except OSError:  # the child closed the pty
                return
            if not chunk:
                return
            output.extend(chunk)

    def reached() -> bool:
        read()
        if phase == "imports":  # parsing done, Temporal's bridge being imported: before the event loop
            # (only once `dev` runs: until its exec the child is a copy of this process, which has the bridge)
            running = b"mcp_tasks_temporal" in Path(f"/proc/{pid}/cmdline").read_bytes()
            return running and "temporal_sdk_bridge" in Path(f"/proc/{pid}/maps").read_text()
        return (_temporal_started if phase == "temporal" else _worker_starting)(state)

    children: list[str] = []
    try:
        wait_until(reached, timeout=120, what=f"dev's start to reach {phase}")
        assert b"Press Ctrl-C to stop." not in output, "dev started before the test could interrupt its start"
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        os.write(terminal, b"\x03")  # one Ctrl-C

        statuses: list[int] = []

        def exited() -> bool:
            read()
            done, status = os.waitpid(pid, os.WNOHANG)
            statuses.append(status)
            return done == pid

        wait_until(exited, timeout=60, what="dev to stop after one Ctrl-C")
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        read()
        os.close(terminal)
    text = output.decode(errors="replace")
    assert os.waitstatus_to_exitcode(statuses[-1]) == 0, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert not [child for child in children if not gone(int(child))], f"left running: {children}\n{text}"
    if phase != "imports":
        assert "mcp-tasks-temporal dev: stopping" in text, text
