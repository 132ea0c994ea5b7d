"""A sweep of hostile inputs over both served task revisions and every method: a 4xx or a JSON-RPC error with a
known code, never an HTTP 500 or code 0; and a body far over the limit costs the front no more than the limit."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Stack
from tests.legacy_wire import legacy_headers
from tests.wire import base_headers, envelope

KNOWN_CODES = {-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022}
REVISIONS = ["2025-11-25", "2026-07-28"]
METHODS = [
    "initialize",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/update",
    "tasks/cancel",
    "subscriptions/listen",
    "notifications/initialized",
    "notifications/cancelled",
]
DEEP = 100_000
"""Past any JSON parser's nesting limit."""
SHALLOW_DEEP = 600
"""Parses with the standard library, not with pydantic's parser: both paths must answer."""
LONE = '"bad \\ud800 text"'
"""A lone UTF-16 surrogate as JSON spells it: valid JSON, not encodable as UTF-8."""


def _params(method: str, revision: str, hostile: str) -> str:
    """The params of `method` as JSON text, with `hostile` (JSON text) where the method takes client data."""
    task_id = json.dumps(str(uuid.uuid4()))
    fields = {
        "initialize": f'"protocolVersion":"2025-11-25","clientInfo":{{"name":"sweep","version":"1"}},'
        f'"capabilities":{{"x":{hostile}}}',
        "tools/list": f'"cursor":{hostile}',
        "tools/call": f'"name":"double","arguments":{{"x":{hostile}}},"task":{{"ttl":60000}}',
        "tasks/get": f'"taskId":{hostile}',
        "tasks/list": f'"cursor":{hostile}',
        "tasks/result": f'"taskId":{hostile}',
        "tasks/update": f'"taskId":{task_id},"inputResponses":{{"k":{hostile}}}',
        "tasks/cancel": f'"taskId":{hostile}',
        "subscriptions/listen": f'"notifications":{{"taskIds":[{hostile}]}}',
        "notifications/initialized": f'"x":{hostile}',
        "notifications/cancelled": f'"requestId":{hostile}',
    }[method]
    if revision == "2026-07-28":
        fields += ',"_meta":' + json.dumps(envelope())
    return "{" + fields + "}"


def _body(method: str, revision: str, hostile: str) -> bytes:
    head = '{"jsonrpc":"2.0",' + ('"id":7,' if not method.startswith("notifications/") else "")
    return f'{head}"method":"{method}","params":{_params(method, revision, hostile)}}}'.encode()


def _headers(method: str, revision: str) -> list[tuple[bytes, bytes]]:
    plain = legacy_headers() if revision == "2025-11-25" else base_headers(method)
    return [(key.encode(), value.encode()) for key, value in plain.items()]


def _hs1(declared: str) -> bytes:
    return b"hs1." + base64.urlsafe_b64encode(declared.encode()).rstrip(b"=")


HOSTILE_BODIES = {
    "deep nesting": "[" * DEEP + "]" * DEEP,
    "nesting a parser takes, another does not": "[" * SHALLOW_DEEP + "]" * SHALLOW_DEEP,
    "lone surrogate": LONE,
    "lone surrogate key": '{"\\udc00":1}',
}
HOSTILE_HEADERS = {
    "lone surrogate in the session ID (UTF-8 bytes)": (b"mcp-session-id", b"hs1.\xed\xa0\x80"),
    "lone surrogate inside the echoed handshake": (
        b"mcp-session-id",
        _hs1('{"n":"1","v":"2025-11-25","c":{},"i":{"name":"\\ud800","version":"1"}}'),
    ),
    "deep nesting inside the echoed handshake": (b"mcp-session-id", _hs1("[" * 700 + "]" * 700)),
    "invalid UTF-8 in the session ID": (b"mcp-session-id", b"\xff\xfe\xfd"),
    "invalid UTF-8 in Mcp-Name": (b"mcp-name", b"\xff\xfe"),
    "lone surrogate in Mcp-Method": (b"mcp-method", b"tools/\xed\xa0\x80"),
    "invalid UTF-8 in the protocol version": (b"mcp-protocol-version", b"2025-11-25\xff"),
}


def _first_answer(http: httpx.Client, url: str, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """Send, and check the first message of the answer (a listen that opens would stream on for ever)."""
    with http.stream("POST", url, content=body, headers=headers) as response:
        assert response.status_code < 500, (response.status_code, response.read()[:300])
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("text/event-stream"):
            data = (line[5:] for line in response.iter_lines() if line.startswith("data:"))
            message: dict[str, Any] = json.loads(next(data, "{}"))
        elif content_type.startswith("application/json"):
            message = json.loads(response.read() or b"{}")
        else:
            return
    if "error" in message:
        error: dict[str, Any] = message["error"]
        assert error["code"] in KNOWN_CODES, error
        assert "Traceback" not in json.dumps(error)


@pytest.fixture(scope="module")
def sync_http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("method", METHODS)
def test_hostile_bodies_get_a_json_rpc_answer(
    stack: Stack, sync_http: httpx.Client, revision: str, method: str
) -> None:
    for hostile in HOSTILE_BODIES.values():
        _first_answer(sync_http, stack.url, _body(method, revision, hostile), _headers(method, revision))
    invalid_utf8 = _body(method, revision, '"\xff"').replace(b"\xc3\xbf", b"\xff")
    assert b"\xff" in invalid_utf8
    _first_answer(sync_http, stack.url, invalid_utf8, _headers(method, revision))


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("method", METHODS)
def test_hostile_headers_get_a_json_rpc_answer(
    stack: Stack, sync_http: httpx.Client, revision: str, method: str
) -> None:
    body = _body(method, revision, "1")  # well-formed, so the request gets as far as its headers take it
    for header in HOSTILE_HEADERS.values():
        headers = [(key, value) for key, value in _headers(method, revision) if key != header[0]]
        _first_answer(sync_http, stack.url, body, [*headers, header])


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
@pytest.mark.parametrize("revision", REVISIONS)
def test_a_huge_streamed_body_is_refused_without_being_held(
    stack: Stack, sync_http: httpx.Client, revision: str
) -> None:
    """286 MB streamed without a length, as an `initialize` (read by the front's own middleware first)."""
    front = stack.fronts[0][0].popen.pid
    chunk = b"[" * (1024 * 1024)
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        yield b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"x":"'
        for _ in range(286):
            sent += len(chunk)
            yield chunk
        yield b'"}}}'

    before = _rss_kib(front)
    try:
        response = sync_http.post(stack.url, content=chunks(), headers=_headers("initialize", revision))
    except (httpx.WriteError, httpx.RemoteProtocolError):
        response = None  # refused and closed while the body was still on its way: refused all the same
    after = _rss_kib(front)
    if response is not None:
        assert response.status_code == 413
        assert response.json()["error"]["code"] == -32600
    print(f"{revision}: front RSS {before // 1024} MiB -> {after // 1024} MiB, {sent // 2**20} MiB sent")
    assert after - before < 64 * 1024, (before, after)


@pytest.mark.parametrize("revision", REVISIONS)
def test_hostile_replies_to_questions_are_refused(stack: Stack, sync_http: httpx.Client, revision: str) -> None:
    """A 2025-era client answers a question by POSTing a JSON-RPC response, read by the front's own middleware."""
    answer_id = f"mcp-tasks-temporal/answer/{uuid.uuid4()}/b25seQ"
    for hostile in [*HOSTILE_BODIES.values(), '{"action":"accept","content":{"v":' + LONE + "}}"]:
        body = f'{{"jsonrpc":"2.0","id":"{answer_id}","result":{hostile}}}'.encode()
        _first_answer(sync_http, stack.url, body, _headers("tasks/update", revision))
        error = f'{{"jsonrpc":"2.0","id":"{answer_id}","error":{{"code":-1,"message":"no","data":{hostile}}}}}'
        _first_answer(sync_http, stack.url, error.encode(), _headers("tasks/update", revision))
