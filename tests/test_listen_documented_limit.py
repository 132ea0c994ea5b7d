"""`subscriptions/listen` takes as many task IDs as docs/design.md says, and refuses one more with -32602.

Through the module's in-process front, with an ID that names no task: the limit counts the IDs the request
names, before anything is read, so the refusal costs the front nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp_types import INVALID_PARAMS

from mcp_tasks_temporal.front.push.listen import MAX_TASK_IDS
from tests.front_app import InProcessFront
from tests.wire import base_headers, envelope, sse_frames

pytestmark = pytest.mark.anyio

DESIGN = Path(__file__).parent.parent / "docs" / "design.md"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
WAIT_S = 10


def documented_limit() -> int:
    found = re.search(r"A listen takes up to ([\d,]+) `taskIds`", DESIGN.read_text())
    assert found is not None, "docs/design.md no longer says how many task IDs a listen takes"
    return int(found.group(1).replace(",", ""))


def listen(task_ids: list[str]) -> dict[str, Any]:
    params = {"notifications": {"taskIds": task_ids}, "_meta": envelope()}
    return {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}


async def first_frame(front: InProcessFront, http: httpx.AsyncClient, task_ids: list[str]) -> dict[str, Any]:
    """The listen's first message: its acknowledgement, or its error."""
    body = json.dumps(listen(task_ids))
    with anyio.fail_after(WAIT_S):
        async with http.stream("POST", front.url, content=body, headers=base_headers("subscriptions/listen")) as reply:
            if not reply.headers.get("content-type", "").startswith("text/event-stream"):
                message: dict[str, Any] = json.loads(await reply.aread())
                return message
            async for frame in sse_frames(reply):
                return frame
    raise AssertionError("the listen's stream ended without a message")


def test_the_limit_is_the_documented_one() -> None:
    assert MAX_TASK_IDS == documented_limit()


async def test_a_listen_on_the_documented_number_of_task_ids_is_acknowledged_and_one_more_refused(
    front: InProcessFront, front_http: httpx.AsyncClient
) -> None:
    limit = documented_limit()
    # The same ID that is not a task's, over and over: the limit counts what the request names, and the
    # front has one ID to look at, not thousands.
    unknown = ["not-a-task"] * (limit + 1)
    refused = await first_frame(front, front_http, unknown)
    assert refused.get("error", {}).get("code") == INVALID_PARAMS, refused
    acked = await first_frame(front, front_http, unknown[:limit])
    assert acked.get("method") == ACKNOWLEDGED, acked
    assert acked["params"]["notifications"]["taskIds"] == []
