"""`dev`'s process care, one piece at a time: the state directory's lock, the parent-death signal, the supervisor.

Each fails within a second or two when its piece breaks, where the end-to-end
tests in test_dev.py would wait for processes that never end or never restart.
"""

from __future__ import annotations

import fcntl
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_tasks_temporal.ops.dev.parent_death import stopped_with_parent
from mcp_tasks_temporal.ops.dev.state_dir import state_dir_lock
from mcp_tasks_temporal.ops.dev.worker_process import READY_LINE, DevWorkerError, SupervisedWorker

PRINT_PDEATHSIG = """\
import ctypes, sys
PR_GET_PDEATHSIG = 2
value = ctypes.c_int(-1)
if ctypes.CDLL(None, use_errno=True).prctl(PR_GET_PDEATHSIG, ctypes.byref(value), 0, 0, 0) != 0:
    sys.exit("prctl failed: errno %d" % ctypes.get_errno())
print("pdeathsig", value.value, flush=True)
"""
"""A child that prints the signal the kernel sends it when its parent dies (0: none)."""


def test_a_held_state_directory_cannot_be_locked_by_anyone_else(tmp_path: Path) -> None:
    with state_dir_lock(tmp_path / "state") as lock:
        # Another open file description, as a second `dev` (or a stray sqlite user) would have.
        with lock.path.open("a+") as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        with pytest.raises(RuntimeError, match="state directory"):
            with state_dir_lock(tmp_path / "state"):
                pass
    with state_dir_lock(tmp_path / "state"):
        pass  # released with its holder


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_a_wrapped_child_gets_sigterm_when_its_parent_dies() -> None:
    unwrapped = subprocess.run([sys.executable, "-c", PRINT_PDEATHSIG], capture_output=True, text=True, timeout=10)
    assert unwrapped.stdout.split() == ["pdeathsig", "0"], "the probe must tell a wrapped child from any other"
    wrapped = subprocess.run(
        stopped_with_parent([sys.executable, "-c", PRINT_PDEATHSIG]), capture_output=True, text=True, timeout=10
    )
    assert wrapped.returncode == 0, wrapped.stderr
    assert wrapped.stdout.split() == ["pdeathsig", str(int(signal.SIGTERM))], wrapped.stdout


def _fake_worker(code: int) -> list[str]:
    """A worker that reports its parent-death signal, says it is ready, and exits at once with `code`."""
    script = PRINT_PDEATHSIG + f"print({READY_LINE!r} + ' ready', flush=True)\nsys.exit({code})\n"
    return [sys.executable, "-c", script]


@pytest.mark.anyio
async def test_the_supervisor_restarts_a_dying_worker_exactly_max_restarts_times(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    supervised = SupervisedWorker(_fake_worker(3), log_path=log, graceful_shutdown_s=1)
    restarts: list[str] = []
    with anyio.fail_after(10):
        await supervised.start(startup_timeout_s=5)
        reason = await supervised.keep_running(restarts.append)
    assert isinstance(reason, DevWorkerError)
    assert len(restarts) == SupervisedWorker.MAX_RESTARTS, restarts
    assert all("the worker exited with code 3" in line and "restarted it (pid" in line for line in restarts), restarts
    assert f"died {SupervisedWorker.MAX_RESTARTS + 1} times" in str(reason), reason
    if sys.platform == "linux":
        # Every start of the worker, restarts included, ends with `dev` however `dev` ends.
        started = [line for line in log.read_text().splitlines() if line.startswith("pdeathsig")]
        assert started == [f"pdeathsig {int(signal.SIGTERM)}"] * (SupervisedWorker.MAX_RESTARTS + 1), started


@pytest.mark.anyio
async def test_a_worker_that_dies_before_it_is_ready_stops_the_supervisor_with_its_reason(tmp_path: Path) -> None:
    broken = [sys.executable, "-c", "import sys; print('no app here', flush=True); sys.exit(4)"]
    supervised = SupervisedWorker(broken, log_path=tmp_path / "worker.log", graceful_shutdown_s=1)
    with anyio.fail_after(10), pytest.raises(DevWorkerError, match="exited with code 4: no app here"):
        await supervised.start(startup_timeout_s=5)
