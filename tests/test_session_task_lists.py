"""An anonymous 2025-11-25 `tasks/list` lists the tasks of the caller's own session, and none that recorded no session.

Every anonymous caller is the same principal, so the front lists by session: a task created under the
caller's tagged session ID records a keyed hash of it. A task that recorded none (a 2026-07-28 client's, or a
2025 client's that echoed no session) is no session's, and no anonymous list may show it. Through the module's
in-process front and worker; the tasks are read back from visibility, as the list reads them.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mcp_tasks_temporal.temporal.ids import ANONYMOUS_OWNER
from tests.front_app import InProcessFront
from tests.legacy_wire import LegacyMcp
from tests.polling import pauses
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

WAIT_S = 10


async def until_listed(front: InProcessFront, task_id: str) -> None:
    """Until visibility lists the anonymous task `task_id` among the newest, where a list's first page reads."""
    wait = pauses()
    with anyio.fail_after(WAIT_S):
        while True:
            page = await front.gateway.list_owned(ANONYMOUS_OWNER, page_token=b"", page_size=50)
            if task_id in {task.task_id for task in page.tasks}:
                return
            await anyio.sleep(next(wait))


async def listed(host: LegacyMcp) -> set[str]:
    tasks: list[dict[str, Any]] = (await host.request("tasks/list")).result["tasks"]
    return {task["taskId"] for task in tasks}


async def test_an_anonymous_list_leaves_out_tasks_that_recorded_no_session(
    front: InProcessFront, front_http: httpx.AsyncClient, front_mcp: TaskCalls
) -> None:
    sessionless = (await front_mcp.start("needs_task", {"x": 1}))["taskId"]
    host = await LegacyMcp(front.url, front_http).handshake()
    reply = await host.request("tools/call", {"name": "double", "arguments": {"x": 2}, "task": {"ttl": 60_000}})
    own = reply.result["task"]["taskId"]
    await until_listed(front, sessionless)
    await until_listed(front, own)
    seen = await listed(host)
    assert own in seen, "the session's own task is listed"
    assert sessionless not in seen, "a task that recorded no session was listed to an anonymous session"
    # A host whose session ID does not check lists nothing at all.
    assert await listed(LegacyMcp(front.url, front_http)) == set()
