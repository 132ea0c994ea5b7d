"""Shared fixtures: one Temporal dev server for the session, and the app's workers and front in the test process.

In the test process (docs/contributing.md, "Writing a test"):

- `temporal` (session): the address of the session's Temporal dev server: the project's search
  attributes, fair dispatch, and per-workflow time skipping enabled (`time_skipper`).
- `temporal_client`: a client of it with the project's data converter, the test's own.
- `time_skipper`: `temporalio.testing.TimeSkipper` on that client: workflows started through
  `time_skipper.client` skip their timers, and `fast_forward(handle, duration)` moves one workflow's clock
  (while none of its activities runs).
- `app_spec` (module): `MODULE:ATTR` of the app the in-process workers and fronts serve: `tests.fixture_app:app`
  unless a module overrides the fixture.
- `app_queue` (module): a task queue that in-process workers of that app serve for the module's tests
  (on `app_client`, the session's client of the in-process app), with `worker_settings` (module:
  `tests.app_workers.app_worker`'s keyword arguments, none unless a module overrides the fixture).
- `front` (module): the app's front server on `app_queue`, its ASGI app in this process
  (`tests.front_app.InProcessFront`), with `front_settings` (module: `in_process_front`'s keyword
  arguments, such as `auth=` or `request_state_keys=`; none unless a module overrides the fixture).
- `front_http` / `front_mcp`: an httpx client whose requests `front` serves, streaming; the task
  operations (`tests.wire.TaskCalls`) over it. `front.http2()` is an httpx2 one, for `TasksClient` and the
  MCP SDK's `Client`; `mcp.client.Client(front.app)` talks to the app in memory.
- `front_url` (module): `front` under uvicorn on a loopback port of this process, for clients that take a URL
  (FastMCP, pydantic-ai, openai-agents, `TasksClient`); `async with other.listening() as url` serves another.
- `open_front`: more fronts of the app on `app_queue`, with the module's `front_settings` and the changes
  given (`in_process_front`'s keyword arguments, and `client=` for a Temporal client of its own), closed
  after the test.
- `open_app`: another app (`MODULE:ATTR`) served here for the test, its workers and a front on a task queue
  of their own (`tests.front_app.in_process_app`, which a module-scoped fixture enters itself); a `client=`
  other than `app_client`.
- `gate`: a folder through which a test steers the fixture app's `gated` tools.
- `temporal_relay`: a relay to the session's Temporal that the test can cut (`tests.tcp_cut.CuttableRelay`): a
  client connected to `temporal_relay.address` (a front's, `open_front(client=...)`) sees Temporal go away.

In other processes, for tests about processes (kill -9, restarts, the CLI, stdio, `dev`): `stack` (the
session's front and worker processes), `mcp` (its task operations), `stack_factory` and `module_stack`
(private ones a test may break).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.testing import TimeSkipper

from mcp_tasks_temporal.temporal.connection import connect_temporal
from tests import processes
from tests.processes import Process, start_front, start_temporal, start_worker, stop_all
from tests.wire import HttpMcp, TaskCalls

if TYPE_CHECKING:
    from tests.front_app import InProcessFront
    from tests.tcp_cut import CuttableRelay

pytest_plugins = ["tests.process_audit"]

LONGEST_FILES_FIRST = (
    "test_push_feed_durability.py",
    "test_dev.py",
    "test_audit.py",
    "test_readme.py",
    "test_push_feed.py",
    "test_scale_out.py",
    "test_workflow_tools.py",
    "test_failing_workflows.py",
    "test_client_cli.py",
)
"""Files of a minute or more on CI's machine, longest first (`--durations`). CI's xdist workers take whole files
in collection order: a long file handed out last would run alone at the end while the other workers sit idle."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


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


TIME_SKIPPING = "frontend.WorkflowTimeSkippingEnabled=true"
"""Lets a workflow skip its timers (`TimeSkipper`); workflows started without asking run on real time."""


@pytest.fixture(scope="session")
def temporal(workdir: Path) -> Iterator[str]:
    process, address = start_temporal(workdir, dynamic_config=[TIME_SKIPPING])
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
    """A client of the session's server for this test alone: temporalio refuses a second worker on a task queue
    through the client of a first that is still registered, and a test's workers are its own business."""
    return await connect_temporal(temporal)


@pytest.fixture
def time_skipper(temporal_client: Client) -> TimeSkipper:
    """Per-workflow time skipping on the session's server: while none of its activities runs, a workflow started
    through `time_skipper.client` jumps to its next timer, so waits of days run in moments."""
    return TimeSkipper(temporal_client)


@pytest.fixture(scope="session")
async def app_client(temporal: str) -> Client:
    """The client of the in-process workers and fronts below (one for the session, as `dev` has one for both)."""
    return await connect_temporal(temporal)


# The in-process app's modules are imported by the fixtures that use them: a run of unit tests alone
# does not pay for importing the front and the worker (a second or two).


@pytest.fixture(scope="module")
def app_spec() -> str:
    """`MODULE:ATTR` of the app the in-process front and workers serve; a module overrides it to serve another."""
    return "tests.fixture_app:app"


@pytest.fixture(scope="module")
def worker_settings() -> dict[str, Any]:
    """`app_worker`'s keyword arguments for the module's workers (`max_concurrent_activities=1`, ...)."""
    return {}


@pytest.fixture(scope="module")
def front_settings() -> dict[str, Any]:
    """`in_process_front`'s keyword arguments for the module's fronts (`auth=`, `request_state_keys=`, ...)."""
    return {}


@pytest.fixture(scope="module")
async def app_queue(app_client: Client, app_spec: str, worker_settings: dict[str, Any]) -> AsyncIterator[str]:
    """A task queue on which in-process workers of the app run the module's tasks."""
    from tests.app_workers import app_worker, new_task_queue
    from tests.front_app import fresh_app

    queue = new_task_queue("app")
    async with app_worker(app_client, fresh_app(app_spec), task_queue=queue, **worker_settings):
        yield queue


@pytest.fixture(scope="module")
async def front(
    app_client: Client, app_spec: str, app_queue: str, front_settings: dict[str, Any]
) -> AsyncIterator[InProcessFront]:
    """The app's front server, in this process, on `app_queue`: shared by the module's tests."""
    from tests.front_app import fresh_app, in_process_front

    async with in_process_front(fresh_app(app_spec), app_client, task_queue=app_queue, **front_settings) as served:
        yield served


@pytest.fixture
async def front_http(front: InProcessFront) -> AsyncIterator[httpx.AsyncClient]:
    async with front.http() as http:
        yield http


@pytest.fixture
def front_mcp(front: InProcessFront, front_http: httpx.AsyncClient) -> TaskCalls:
    return front.calls(front_http)


@pytest.fixture(scope="module")
async def front_url(front: InProcessFront) -> AsyncIterator[str]:
    """`front` over real HTTP: served by uvicorn on a free loopback port of this process, for the module's tests."""
    async with front.listening() as url:
        yield url


OpenFront = Callable[..., Awaitable["InProcessFront"]]
"""`await open_front(client=None, **settings)`: one more front of the module's app, with `in_process_front`'s
keyword arguments over the module's `front_settings`, on its own Temporal client if given (`app_client` if not)."""


@pytest.fixture
async def open_front(
    app_client: Client, app_spec: str, app_queue: str, front_settings: dict[str, Any]
) -> AsyncIterator[OpenFront]:
    """More fronts of the app on `app_queue` (other settings, or just another front), closed after the test."""
    from tests.front_app import fresh_app, in_process_front

    async with AsyncExitStack() as stack:

        async def open_one(*, client: Client | None = None, **settings: Any) -> InProcessFront:
            settings = {"task_queue": app_queue, **front_settings, **settings}
            app = fresh_app(app_spec)
            return await stack.enter_async_context(in_process_front(app, client or app_client, **settings))

        yield open_one


OpenApp = Callable[..., Awaitable["InProcessFront"]]
"""`await open_app(spec, client=None, **settings)`: another app's workers and front, with `in_process_front`'s
keyword arguments."""


@pytest.fixture
async def open_app(app_client: Client) -> AsyncIterator[OpenApp]:
    """Other apps served in this process for the test: each its workers and a front, closed after the test."""
    from tests.front_app import in_process_app

    async with AsyncExitStack() as stack:

        async def open_one(spec: str, *, client: Client | None = None, **settings: Any) -> InProcessFront:
            return await stack.enter_async_context(in_process_app(client or app_client, spec, **settings))

        yield open_one


@pytest.fixture
def temporal_relay(temporal: str) -> Iterator[CuttableRelay]:
    """A relay to the session's Temporal, cut while `with temporal_relay.cut():` lasts."""
    from tests.tcp_cut import CuttableRelay

    host, port = temporal.rsplit(":", 1)
    relay = CuttableRelay(host, int(port))
    yield relay
    relay.close()


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    """A folder through which a test steers a `gated` tool running in the worker."""
    folder = tmp_path / f"gate-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder
