"""Shared fixtures: one Temporal dev server, one worker and one front server for the session.

Tests that stop or kill processes build their own stack (`stack_factory`) so
the shared one stays healthy.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from mcp_tasks_temporal.ops.dev.embedded_temporal import temporal_cli
from mcp_tasks_temporal.temporal.connection import connect_temporal
from tests import processes
from tests.forkserver import ForkServer
from tests.processes import Process, child_env, start_front, start_temporal, start_worker, stop_all
from tests.wire import HttpMcp, TaskCalls

LONGEST_FILES_FIRST = (
    "test_push_feed_durability.py",
    "test_readme.py",
    "test_dev.py",
    "test_audit.py",
    "test_failing_workflows.py",
    "test_workflow_tools.py",
    "test_scale_out.py",
    "test_client.py",
    "test_nexus_tools.py",
    "test_mcp1.py",
)
"""Files of a minute or more on CI's machine, longest first (`--durations`). CI's xdist workers take whole files
in collection order: a long file handed out last would run alone at the end while the other workers sit idle."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def fork_server() -> Iterator[ForkServer | None]:
    """Warm starts for the session's `python -m mcp_tasks_temporal` children (tests/forkserver.py).

    `MCP_TASKS_TEST_FORK_SERVER=0` starts every child the ordinary way instead.
    """
    if sys.platform != "linux" or os.environ.get("MCP_TASKS_TEST_FORK_SERVER") == "0":
        yield None
        return
    # A short folder of its own: a Unix socket's path has a hundred-odd bytes at most.
    with tempfile.TemporaryDirectory(prefix="mcp-fork-") as folder:
        server = ForkServer.start(Path(folder), child_env())
        processes.FORK_SERVER = server
        try:
            yield server
        finally:
            processes.FORK_SERVER = None
            server.stop()


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("processes")


TEARDOWN_GRACE_S = 5.0


@dataclass
class Stack:
    """A Temporal address plus the front servers and workers started against it."""

    workdir: Path
    temporal: str
    task_queue: str
    fronts: list[tuple[Process, str]] = field(default_factory=list[tuple[Process, str]])
    workers: list[Process] = field(default_factory=list[Process])

    def add_worker(self, extra: list[str] | None = None) -> Process:
        worker = start_worker(self.workdir, self.temporal, self.task_queue, extra=extra)
        self.workers.append(worker)
        return worker

    def add_front(self, *, port: int | None = None, extra: list[str] | None = None) -> str:
        front = start_front(self.workdir, self.temporal, self.task_queue, port=port, extra=extra)
        self.fronts.append(front)
        return front[1]

    @property
    def url(self) -> str:
        return self.fronts[0][1]

    def stop(self) -> None:
        # Teardown needs no graceful drain: a worker still running a tool the test left waiting would
        # otherwise hold the run for the whole grace period.
        stop_all([*(front for front, _ in self.fronts), *self.workers], TEARDOWN_GRACE_S)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log()[-4000:]}" for p in [*(f for f, _ in self.fronts), *self.workers])


@pytest.fixture(scope="session")
def temporal(workdir: Path) -> Iterator[str]:
    process, address = start_temporal(workdir)
    yield address
    process.stop()


@pytest.fixture(scope="session")
def stack(workdir: Path, temporal: str) -> Iterator[Stack]:
    shared = Stack(workdir, temporal, task_queue=f"tests-{uuid.uuid4()}")
    shared.add_worker()
    shared.add_front()
    yield shared
    shared.stop()


@pytest.fixture
def stack_factory(workdir: Path, temporal: str) -> Iterator[type[Stack] | object]:
    """Build a private stack (own task queue) that a test may break."""
    made: list[Stack] = []

    def make() -> Stack:
        private = Stack(workdir, temporal, task_queue=f"private-{uuid.uuid4()}")
        made.append(private)
        return private

    yield make
    for private in made:
        private.stop()


@contextmanager
def module_stack(workdir: Path, temporal: str, name: str) -> Generator[Stack]:
    """A private stack (own task queue) for a module-scoped fixture: started once, shared by tests that
    only call it, so each test does not pay for starting its processes."""
    private = Stack(workdir, temporal, task_queue=f"{name}-{uuid.uuid4()}")
    try:
        yield private
    finally:
        private.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30, verify=processes.tls_context()) as client:
        yield client


@pytest.fixture
def mcp(stack: Stack, http: httpx.AsyncClient) -> TaskCalls:
    return TaskCalls(HttpMcp(stack.url, http))


@pytest.fixture
async def temporal_client(temporal: str) -> Client:
    return await connect_temporal(temporal)


@pytest.fixture(scope="module")
async def skipping() -> AsyncIterator[WorkflowEnvironment]:
    """Temporal with time skipping: while no workflow or activity task is outstanding, its clock jumps to the
    next timer, so waits of days run in moments (tests of workflow logic, with an in-process worker)."""
    env = await WorkflowEnvironment.start_time_skipping_v2(
        dev_server_existing_path=temporal_cli(),
        dev_server_log_level="error",
        dev_server_extra_args=["--dynamic-config-value", "frontend.WorkflowTimeSkippingEnabled=true"],
        data_converter=pydantic_data_converter,
    )
    yield env
    await env.shutdown()


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    """A folder through which a test steers a `gated` tool running in the worker."""
    folder = tmp_path / f"gate-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder
