"""Tenant isolation: with bearer tokens configured, a task is visible only to the principal that created it.

Through the in-process front (`auth=` as `--tokens` sets it up) and its workers.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import pytest
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal import BearerAuth
from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from mcp_tasks_temporal.front.http.credential_life import EndWithCredential
from tests.bearer import BearerMcp, bearer, token_auth
from tests.conftest import OpenFront
from tests.front_app import InProcessFront
from tests.legacy_wire import LegacyMcp
from tests.test_push import ELICIT, SUB, collect_until_terminal, http_listen, listen_message
from tests.wire import TERMINAL, Reply, TaskCalls, base_headers, envelope

pytestmark = pytest.mark.anyio

ALICE, BOB = "alice-token-7f3a9c", "bob-token-41d2e8"
WAIT = 30


@pytest.fixture(scope="module")
def front_settings() -> dict[str, Any]:
    """One front for the module: every test makes its own tasks, so none sees another's."""
    return {"auth": token_auth({ALICE: "alice@example.com", BOB: "bob@example.com"})}


@pytest.fixture
def secured(front: InProcessFront, front_http: httpx.AsyncClient) -> Secured:
    return Secured(front.url, front_http)


class Secured:
    """The secured front: its address and an httpx client of it."""

    def __init__(self, url: str, http: httpx.AsyncClient) -> None:
        self.url = url
        self.http = http

    def calls(self, token: str) -> TaskCalls:
        """The task operations as the principal of `token`."""
        return TaskCalls(BearerMcp(self.url, self.http, token))


async def test_requests_without_a_valid_token_get_401(secured: Secured) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": envelope()}}
    for auth in ({}, {"authorization": "Bearer wrong"}, {"authorization": f"Basic {ALICE}"}):
        response = await secured.http.post(secured.url, json=body, headers={**base_headers("server/discover"), **auth})
        assert response.status_code == 401


async def test_another_principal_cannot_read_answer_or_cancel_a_task(secured: Secured, gate: Path) -> None:
    alice, bob = secured.calls(ALICE), secured.calls(BOB)
    created = await alice.start("gated", {"gate": str(gate)})
    task_id = created["taskId"]
    never_issued = "00000000-0000-4000-8000-000000000000"

    async def update(task_id: str) -> Reply:
        return await bob.update(task_id, {"k": {"action": "accept"}})

    for operation in (bob.get, bob.cancel, update):
        theirs, unknown = await operation(task_id), await operation(never_issued)
        assert theirs.status == unknown.status
        assert theirs.error == unknown.error, "another principal's task must look exactly like an unknown one"
        assert theirs.error["code"] == -32602
    assert (await alice.get(task_id)).result["status"] == "working", "Bob's cancel must not have touched it"
    (gate / "release").write_text("1")
    assert (await alice.wait_for(task_id))["status"] == "completed"


async def test_listen_leaves_out_another_principals_tasks(secured: Secured) -> None:
    mine = (await secured.calls(ALICE).start("double", {"x": 1}))["taskId"]
    theirs = (await secured.calls(BOB).start("double", {"x": 2}))["taskId"]
    async with http_listen(secured.url, secured.http, listen_message([mine, theirs]), token=ALICE) as frames:
        ack = await anext(frames)
    assert ack["params"]["notifications"]["taskIds"] == [mine]


async def test_two_listens_on_one_front_each_get_only_their_own_tasks_changes(secured: Secured, tmp_path: Path) -> None:
    gates = {token: tmp_path / f"gate-{token}" for token in (ALICE, BOB)}
    tasks: dict[str, str] = {}
    for token, gate in gates.items():
        gate.mkdir()
        tasks[token] = (await secured.calls(token).start("gated", {"gate": str(gate)}))["taskId"]
    seen: dict[str, list[dict[str, Any]]] = {token: [] for token in gates}
    finished = {token: anyio.Event() for token in gates}

    async def follow(token: str, frames: AsyncIterator[dict[str, Any]]) -> None:
        async for frame in frames:
            seen[token].append(frame["params"])
            if frame["params"].get("taskId") == tasks[token] and frame["params"]["status"] in TERMINAL:
                finished[token].set()
                return

    # Both principals ask for both tasks, each on a subscription of its own on this one front.
    both = list(tasks.values())
    async with (
        http_listen(secured.url, secured.http, listen_message(both, request_id=1), token=ALICE) as alice_frames,
        http_listen(secured.url, secured.http, listen_message(both[::-1], request_id=2), token=BOB) as bob_frames,
    ):
        assert (await anext(alice_frames))["params"]["notifications"]["taskIds"] == [tasks[ALICE]]
        assert (await anext(bob_frames))["params"]["notifications"]["taskIds"] == [tasks[BOB]]
        with anyio.fail_after(WAIT * 2):
            async with anyio.create_task_group() as group:
                group.start_soon(follow, ALICE, alice_frames)
                group.start_soon(follow, BOB, bob_frames)
                # One task after the other, so each one's changes happen while the other stream is open.
                for token, gate in gates.items():
                    (gate / "release").write_text("1")
                    await finished[token].wait()
    for token, subscription in ((ALICE, 1), (BOB, 2)):
        assert {note["taskId"] for note in seen[token]} == {tasks[token]}, "a stream carried another task"
        assert {note["_meta"][SUB] for note in seen[token]} == {subscription}


async def test_a_closed_task_the_front_remembers_is_still_invisible_to_another_principal(secured: Secured) -> None:
    alice, bob = secured.calls(ALICE), secured.calls(BOB)
    task_id = (await alice.start("double", {"x": 1}))["taskId"]
    assert (await alice.wait_for(task_id))["status"] == "completed"
    assert (await alice.get(task_id)).result["status"] == "completed", "now read from the front's memory"
    never_issued = "00000000-0000-4000-8000-000000000000"
    for theirs, unknown in (
        (await bob.get(task_id), await bob.get(never_issued)),
        (await bob.cancel(task_id), await bob.cancel(never_issued)),
        (await bob.update(task_id, {}), await bob.update(never_issued, {})),
    ):
        assert theirs.error == unknown.error and theirs.error["code"] == -32602


# The owner's own operations: each must find the task under the principal that created it.


async def test_the_owner_reads_and_answers_their_own_task(secured: Secured) -> None:
    alice = secured.calls(ALICE)
    task_id = (await alice.start("greet_someone", capabilities=ELICIT))["taskId"]
    waiting = await alice.wait_for(task_id, ["input_required"], timeout=WAIT)
    [key] = waiting["inputRequests"]
    ack = await alice.update(task_id, {key: {"action": "accept", "content": {"name": "Alice"}}})
    assert ack.status == 200 and ack.result["resultType"] == "complete", ack.body
    done = await alice.wait_for(task_id, timeout=WAIT)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Hello, Alice!"


async def test_the_owner_cancels_their_own_task(secured: Secured, gate: Path) -> None:
    alice = secured.calls(ALICE)
    task_id = (await alice.start("gated", {"gate": str(gate)}))["taskId"]
    await alice.wait_for(task_id, lambda t: t.get("statusMessage") is not None, timeout=WAIT)
    ack = await alice.cancel(task_id)
    assert ack.status == 200 and ack.result["resultType"] == "complete", ack.body
    assert (await alice.wait_for(task_id, {"cancelled"}, timeout=WAIT))["status"] == "cancelled"
    assert (gate / "cancelled").exists(), "the tool itself must have been cancelled"


async def test_the_owner_is_pushed_every_change_of_their_own_task(secured: Secured, gate: Path) -> None:
    alice = secured.calls(ALICE)
    task_id = (await alice.start("gated", {"gate": str(gate)}))["taskId"]
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(WAIT):
        async with http_listen(secured.url, secured.http, listen_message([task_id]), token=ALICE) as frames:
            ack = await anext(frames)
            assert ack["params"]["notifications"]["taskIds"] == [task_id]
            async with anyio.create_task_group() as group:
                group.start_soon(collect_until_terminal, frames, task_id, seen)
                await alice.wait_for(task_id, lambda t: t.get("statusMessage") is not None, timeout=WAIT)
                (gate / "release").write_text("1")
    notes = [frame["params"] for frame in seen if frame.get("method") == "notifications/tasks"]
    assert notes and all(note["taskId"] == task_id for note in notes)
    assert notes[0]["status"] == "working"
    assert notes[-1]["status"] == "completed"
    assert notes[-1]["result"]["content"][0]["text"] == f"released {gate.name}"


# -- a token removed from the file ----------------------------------------------------------------

CAROL, DAVE = "carol-token-0b7e51", "dave-token-c42f90"


async def ended_with(frames: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    """The error a stream ends with (any notification before it is skipped)."""
    async for frame in frames:
        if "error" in frame:
            return frame["error"]
        assert "result" not in frame, frame
    raise AssertionError("the stream ended without an error")


async def test_a_token_removed_from_the_file_ends_its_streams_and_requests_but_no_one_elses(
    open_front: OpenFront, tmp_path: Path, gate: Path
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# token principal\n{CAROL} carol@example.com\n\n{DAVE} dave@example.com\n")
    from_file = await open_front(auth=BearerAuth(StaticTokenVerifier.from_file(tokens)))
    async with from_file.http() as http:
        await _removed_token_ends_its_streams(Secured(from_file.url, http), tokens, gate)


async def _removed_token_ends_its_streams(front: Secured, tokens: Path, gate: Path) -> None:
    url, http = front.url, front.http
    carol, dave = front.calls(CAROL), front.calls(DAVE)
    carols = (await carol.start("gated", {"gate": str(gate)}))["taskId"]
    daves = (await dave.start("double", {"x": 4}))["taskId"]
    legacy = LegacyMcp(url, http, headers=bearer(CAROL))
    created = await legacy.request("tools/call", {"name": "gated", "arguments": {"gate": str(gate)}, "task": {}})
    polled = created.result["task"]["taskId"]
    with anyio.fail_after(WAIT):
        async with (
            http_listen(url, http, listen_message([carols]), token=CAROL) as listened,
            legacy.stream("tasks/result", {"taskId": polled}) as long_poll,
        ):
            assert (await anext(listened))["params"]["notifications"]["taskIds"] == [carols]
            tokens.write_text(f"{DAVE} dave@example.com\n")
            for frames in (listened, long_poll):
                error = await ended_with(frames)
                assert error["code"] == -32600 and error["data"] == {"reason": "credential_revoked"}
    assert (await carol.get(carols)).status == 401
    assert (await dave.wait_for(daves, timeout=WAIT))["status"] == "completed"


async def test_the_token_file_is_read_again_on_each_change_and_a_broken_one_keeps_the_tokens_it_had(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"{CAROL} carol@example.com\n{DAVE} dave@example.com\n")
    verifier = StaticTokenVerifier.from_file(path)
    assert (await verifier.verify_token(CAROL)) is not None
    replacement = tmp_path / "tokens.new"
    replacement.write_text(f"{DAVE} dave@example.com\n")
    replacement.replace(path)  # an atomic replace: a new inode
    assert await verifier.verify_token(CAROL) is None
    assert (await verifier.verify_token(DAVE)) is not None
    path.write_text(f"{DAVE} dave@example.com extra-field\n")  # half-written or malformed
    assert (await verifier.verify_token(DAVE)) is not None
    path.unlink()
    assert (await verifier.verify_token(DAVE)) is not None
    path.write_text(f"{CAROL} carol@example.com\n")
    assert (await verifier.verify_token(CAROL)) is not None and await verifier.verify_token(DAVE) is None


class _Listed:
    """A revocable verifier whose list a test edits."""

    def __init__(self, **principals: str) -> None:
        self.principals = principals

    def principal_of(self, token: str) -> str | None:
        return self.principals.get(token)


async def _through_watch(
    verifier: object, token: AccessToken, handler: Callable[[], Awaitable[Any]], *, recheck_s: float = 0.05
) -> Any:
    watch = EndWithCredential(verifier, recheck_s=recheck_s)
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        return await watch(cast(Any, None), lambda _ctx: handler())
    finally:
        auth_context_var.reset(reset)


async def test_a_request_within_its_credential_is_untouched_errors_included() -> None:
    token = AccessToken(token="t", client_id="carol", scopes=[], expires_at=int(time.time()) + 60)

    async def answer() -> dict[str, Any]:
        return {"ok": True}

    async def refuse() -> None:
        raise MCPError(code=-32602, message="bad")

    assert await _through_watch(_Listed(t="carol"), token, answer) == {"ok": True}
    with pytest.raises(MCPError) as refused:  # as raised, not wrapped in an exception group
        await _through_watch(_Listed(t="carol"), token, refuse)
    assert refused.value.error.code == -32602


@pytest.mark.parametrize("change", ["expires", "removed", "reassigned"])
async def test_a_long_request_ends_with_its_credential(change: str) -> None:
    listed = _Listed(t="carol")
    expires_at = time.time() + (1 if change == "expires" else 60)
    token = AccessToken(token="t", client_id="carol", scopes=[], expires_at=math.ceil(expires_at))
    started = anyio.Event()

    async def stream() -> None:
        started.set()
        await anyio.sleep_forever()

    async def change_it() -> None:
        await started.wait()
        if change == "removed":
            listed.principals.clear()
        elif change == "reassigned":
            listed.principals["t"] = "dave"

    reason = "credential_expired" if change == "expires" else "credential_revoked"
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(change_it)
            with pytest.raises(MCPError) as ended:
                await _through_watch(listed, token, stream)
            assert ended.value.error.code == -32600 and ended.value.error.data == {"reason": reason}
