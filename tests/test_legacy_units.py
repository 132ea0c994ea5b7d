"""Pure logic of the 2025-11-25 face: echoed handshakes, question IDs and the legacy task shape."""

from __future__ import annotations

from typing import Any

from mcp_tasks_temporal.front.legacy import handshake_echo
from mcp_tasks_temporal.front.legacy.legacy_tasks import answer_id, legacy_task, parse_answer_id
from mcp_tasks_temporal.front.session_binding import SessionKeys

INIT: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "host", "version": "1"},
}


def last_char_changed(value: str) -> str:
    """`value` with its tag's last character replaced by another: a fixed one would be the tag's own one time in 64."""
    return value[:-1] + ("B" if value[-1] != "B" else "C")


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


def test_a_tagged_session_checks_only_under_the_fronts_keys() -> None:
    old, new = SessionKeys(["o" * 40]), SessionKeys(["n" * 40])
    rotating = SessionKeys(["n" * 40, "o" * 40])
    session = handshake_echo.encode(INIT, old)
    assert session is not None
    assert handshake_echo.decode(session) is not None  # any front reads the handshake, key or not
    untagged = session.rpartition(".")[0]
    assert old.untagged(session) == untagged and rotating.untagged(session) == untagged
    assert new.untagged(session) is None
    for forged in (untagged, untagged + "." + "A" * 32, last_char_changed(session), session + "x", "\ud800", None):
        assert old.bindings(forged) == []
    # A binding made under the old key is still matched once the new key leads.
    assert old.bindings(session)[0] in rotating.bindings(session)
    assert old.bindings(session)[0] not in new.bindings(new.tag(untagged))


def test_list_cursors_open_only_for_whom_they_were_made() -> None:
    keys = SessionKeys(["k" * 40])
    cursor = keys.seal_cursor(b"\x00page-token\xff", "owner-a")
    assert keys.open_cursor(cursor, "owner-a") == b"\x00page-token\xff"
    assert keys.open_cursor(cursor, "owner-b") is None
    assert SessionKeys(["j" * 40]).open_cursor(cursor, "owner-a") is None
    for forged in ("%%%", "AAAA", "AAAA." + "A" * 32, last_char_changed(cursor), "é." + "A" * 32):
        assert keys.open_cursor(forged, "owner-a") is None


def test_a_handshake_that_is_not_valid_unicode_is_not_echoed_nor_read() -> None:
    assert handshake_echo.encode({**INIT, "clientInfo": {"name": "\ud800", "version": "1"}}) is None
    assert handshake_echo.decode("hs1.eyJpIjp7Im5hbWUiOiJcdWQ4MDAifX0") is None  # {"i":{"name":"\ud800"}}


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
