"""Pure logic of the 2025-11-25 face: echoed handshakes, question IDs and the legacy task shape."""

from __future__ import annotations

from typing import Any

from mcp_tasks_temporal.front import handshake_echo
from mcp_tasks_temporal.front.legacy_tasks import answer_id, legacy_task, parse_answer_id

INIT: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "host", "version": "1"},
}


def test_a_handshake_survives_its_echo() -> None:
    session = handshake_echo.encode(INIT)
    assert session is not None
    echoed = handshake_echo.decode(session)
    assert echoed == handshake_echo.Handshake("2025-11-25", {"elicitation": {}}, {"name": "host", "version": "1"})
    assert all(0x21 <= ord(char) <= 0x7E for char in session)  # what a session ID may hold
    assert handshake_echo.encode(INIT) != session  # one ID per handshake


def test_foreign_or_oversized_session_ids_carry_no_handshake() -> None:
    assert handshake_echo.decode(None) is None
    assert handshake_echo.decode("4f1c0d2e9a") is None
    assert handshake_echo.decode("hs1.!!!") is None
    huge = {**INIT, "clientInfo": {"name": "x" * 4000, "version": "1"}}
    assert handshake_echo.encode(huge) is None


def test_question_ids_name_their_task_and_key() -> None:
    task_id = "0f8fad5b-d9cb-469f-a165-70867728950e"
    for key in ("only", "a/b", "ünï", "confirm-3"):
        assert parse_answer_id(answer_id(task_id, key)) == (task_id, key)
    assert parse_answer_id(7) is None
    assert parse_answer_id("mcp-tasks-temporal/answer/") is None
    assert parse_answer_id("other/answer/x/b25seQ") is None


def test_legacy_task_shape() -> None:
    detailed: dict[str, Any] = {
        "taskId": "t",
        "status": "failed",
        "createdAt": "2026-01-01T00:00:00.000Z",
        "lastUpdatedAt": "2026-01-01T00:00:01.000Z",
        "ttlMs": None,
        "pollIntervalMs": 250,
        "error": {"code": -32042, "message": "backend refused"},
    }
    assert legacy_task(detailed) == {
        "taskId": "t",
        "status": "failed",
        "createdAt": "2026-01-01T00:00:00.000Z",
        "lastUpdatedAt": "2026-01-01T00:00:01.000Z",
        "ttl": None,
        "pollInterval": 250,
        "statusMessage": "backend refused",
    }
