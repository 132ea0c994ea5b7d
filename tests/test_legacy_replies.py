"""A 2025-11-25 host's reply to a live question: refused when it cannot be stored, and the question stays open.

The host answers the question a held call's stream carried by POSTing a JSON-RPC response, which the front
hands to the task as `tasks/update` would. A reply nested deeper than what every process reads back
(`MAX_REPLY_NESTING`) is refused with HTTP 400 before anything is delivered: delivered, it would answer the
question with a value the task cannot keep, or fail on its way. The question stays open, and the host's next
reply answers it. The front and the worker run in the test process.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcp_tasks_temporal.front.legacy.legacy_answers import MAX_REPLY_NESTING, nested_deeper_than
from mcp_tasks_temporal.front.legacy.legacy_tasks import parse_answer_id
from tests.front_app import InProcessFront
from tests.legacy_wire import LegacyMcp, legacy_headers

pytestmark = pytest.mark.anyio

WAIT_S = 10
DEEP = [MAX_REPLY_NESTING + 50, 300]
"""Past the limit and within what the converter writes (so it would be delivered), and past that too."""


@pytest.fixture(scope="module")
def app_spec() -> str:
    return "tests.plain_calls_app:app"


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_nesting_is_measured_without_recursion() -> None:
    assert not nested_deeper_than({"a": [1, {"b": []}]}, 4)
    assert nested_deeper_than({"a": [1, {"b": []}]}, 3)
    assert nested_deeper_than(nested(100_000), MAX_REPLY_NESTING)


async def test_a_reply_nested_too_deep_is_refused_and_the_question_stays_open(
    front: InProcessFront, front_http: httpx.AsyncClient, tmp_path: Path
) -> None:
    host = await LegacyMcp(front.url, front_http).handshake({"elicitation": {}})
    effects = tmp_path / f"effects-{uuid.uuid4().hex[:8]}"
    effects.mkdir()
    params = {"name": "release", "arguments": {"ref": "v1", "effects": str(effects), "approve_before": "deploy"}}
    answer: dict[str, Any] | None = None
    async with host.stream("tools/call", params) as frames:
        with anyio.fail_after(WAIT_S):
            async for frame in frames:
                if frame.get("method") == "elicitation/create":
                    for depth in DEEP:
                        # A decline: delivered, it would end the pipeline before its deploy.
                        declined = {"action": "decline", "_meta": {"trace": nested(depth - 3)}}
                        reply = {"jsonrpc": "2.0", "id": frame["id"], "result": declined}
                        assert nested_deeper_than(reply, MAX_REPLY_NESTING)
                        sent = await front_http.post(
                            front.url, content=json.dumps(reply), headers={**legacy_headers(), **host.extra_headers}
                        )
                        assert sent.status_code == 400, (depth, sent.status_code)
                    parsed = parse_answer_id(frame["id"])
                    assert parsed is not None
                    task = (await host.request("tasks/get", {"taskId": parsed[0]})).result
                    assert task["status"] == "input_required", task
                    assert await host.answer(frame["id"], {"action": "accept", "content": {"approve": True}}) == 202
                elif "result" in frame or "error" in frame:
                    answer = frame
                    break
    assert answer is not None and "result" in answer, answer
    assert json.loads(answer["result"]["content"][0]["text"])["deployed"] is True, answer
