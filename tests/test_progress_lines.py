"""A plain call's progress: each status line once, however often the task's status changes under it.

A 2025-11-25 host that declared `elicitation` gets a workflow tool's question on its held call's stream and
answers it there; the call's progress token asks for the task's status lines as `notifications/progress`.
The line stays the same while the task goes from working to input_required and back to working: the client
must see it once, not once per status. The front and the worker run in the test process.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.front_app import InProcessFront
from tests.legacy_wire import LegacyMcp

pytestmark = pytest.mark.anyio

PIPELINE = ["checkout", "compile", "test", "deploy"]
WAIT_S = 10


@pytest.fixture(scope="module")
def app_spec() -> str:
    return "tests.plain_calls_app:app"


async def test_a_status_line_unchanged_across_a_question_is_reported_once(
    front: InProcessFront, front_http: httpx.AsyncClient, tmp_path: Path
) -> None:
    host = await LegacyMcp(front.url, front_http).handshake({"elicitation": {}})
    effects = tmp_path / f"effects-{uuid.uuid4().hex[:8]}"
    effects.mkdir()
    arguments = {"ref": "v1", "effects": str(effects), "approve_before": "deploy"}
    params = {"name": "release", "arguments": arguments, "_meta": {"progressToken": "release-v1"}}
    lines: list[str] = []
    answer: dict[str, Any] | None = None
    async with host.stream("tools/call", params) as frames:
        with anyio.fail_after(WAIT_S):
            async for frame in frames:
                if frame.get("method") == "notifications/progress":
                    assert frame["params"]["progress"] == len(lines) + 1, frame
                    lines.append(frame["params"]["message"])
                elif frame.get("method") == "elicitation/create":
                    # Answered while the call's stream stays open: the task goes on to working under the same line.
                    assert await host.answer(frame["id"], {"action": "accept", "content": {"approve": True}}) == 202
                elif "result" in frame or "error" in frame:
                    answer = frame
                    break
    assert answer is not None and "result" in answer, answer
    assert json.loads(answer["result"]["content"][0]["text"])["deployed"] is True, answer
    assert lines == [f"{step} ({number}/4)" for number, step in enumerate(PIPELINE, start=1)]
