"""The owner key in each task's memo: written at creation, checked on every read (through in-process fronts)."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import uuid
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_tasks_temporal.ops.dev.owner_secret import DATABASE_FILE, SECRET_FILE, use_dev_owner_secret
from mcp_tasks_temporal.ops.operator_connection import principal_of
from mcp_tasks_temporal.ops.settings.processes import DevSettings, OperatorSettings
from mcp_tasks_temporal.temporal.contract import TOOL_TASK_WORKFLOW, Memo, ToolTaskInput
from mcp_tasks_temporal.temporal.fairness import FairnessPolicy, fairness_key
from mcp_tasks_temporal.temporal.ids import (
    ANONYMOUS_OWNER,
    LEGACY_OWNERS_ENV,
    MIN_SECRET_CHARS,
    OWNER_SECRET_ENV,
    UNKEYED,
    OwnerKeying,
    OwnerSecretError,
    legacy_owner_key,
)
from tests.bearer import BearerMcp, token_auth
from tests.conftest import OpenFront
from tests.wire import TaskCalls, envelope

pytestmark = pytest.mark.anyio


async def test_every_task_records_its_owner_key_in_the_memo(front_mcp: TaskCalls, temporal_client: Client) -> None:
    created = await front_mcp.start("double", {"x": 1})
    description = await temporal_client.get_workflow_handle(UNKEYED.workflow_id(created["taskId"], None)).describe()
    assert (await description.memo())[Memo.OWNER] == ANONYMOUS_OWNER


async def test_a_workflow_under_a_task_id_whose_memo_names_another_owner_is_not_a_task(
    front_mcp: TaskCalls, temporal_client: Client
) -> None:
    task_id = str(uuid.uuid4())
    task = ToolTaskInput(
        task_id=task_id,
        tool="double",
        arguments={"x": 1},
        meta=envelope(),
        created_at_ms=0,
        ttl_ms=None,
        poll_interval_ms=1000,
    )
    # Started by hand (as an operator or another tool could), on a queue no worker polls.
    handle = await temporal_client.start_workflow(
        TOOL_TASK_WORKFLOW,
        task,
        id=UNKEYED.workflow_id(task_id, None),
        task_queue=f"nobody-{task_id}",
        memo={Memo.TASK_ID: task_id, Memo.OWNER: UNKEYED.owner_key("mallory"), Memo.STATUS: "working"},
    )
    try:
        for reply in (await front_mcp.get(task_id), await front_mcp.cancel(task_id)):
            assert reply.error["code"] == -32602
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING, "the refused cancel did nothing"
    finally:
        await handle.terminate()


# -- keyed owner keys ---------------------------------------------------------------------

SECRET = "a-deployment-wide-owner-secret-0123456789"


def owner_keying() -> OwnerKeying:
    """What every command keys owner keys with: its settings' keying, from the variables as set now."""
    return OperatorSettings().owner_keying()


def test_owner_keys_are_keyed_hashes_every_component_computes_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    principal = principal_of("alice@example.com")
    monkeypatch.delenv(LEGACY_OWNERS_ENV, raising=False)
    monkeypatch.delenv(OWNER_SECRET_ENV, raising=False)
    unkeyed_keying = owner_keying()
    unkeyed = unkeyed_keying.owner_key(principal)
    assert unkeyed_keying == UNKEYED
    assert unkeyed == hashlib.sha256(principal.encode()).hexdigest()[:32] == legacy_owner_key(principal)

    monkeypatch.setenv(OWNER_SECRET_ENV, SECRET)
    keying = owner_keying()
    keyed = keying.owner_key(principal)
    expected = hmac.new(SECRET.encode(), b"mcp-tasks-temporal/owner\x00" + principal.encode(), hashlib.sha256)
    assert keyed == expected.hexdigest()[:32] != unkeyed
    # The workflow ID, the fairness key and the operator commands' lookups all derive from the one key.
    assert keying.workflow_id("t", principal) == f"mcp-task/{keyed}/t"
    assert fairness_key(principal, keying) == keyed
    assert FairnessPolicy.weighted({"alice@example.com": 3}, keying=keying).weight(principal) == 3
    assert keying.owner_keys(principal) == [keyed]
    assert keying.owner_key(None) == ANONYMOUS_OWNER  # nothing to hide about the anonymous owner

    # Another deployment's secret gives other keys: a guessed name hashed without the secret matches nothing.
    monkeypatch.setenv(OWNER_SECRET_ENV, SECRET[::-1])
    assert owner_keying().owner_key(principal) not in (keyed, unkeyed)

    # The migration window: the legacy key is found as well, after the keyed one.
    monkeypatch.setenv(OWNER_SECRET_ENV, SECRET)
    monkeypatch.setenv(LEGACY_OWNERS_ENV, "1")
    assert owner_keying().owner_keys(principal) == [keyed, unkeyed]
    assert owner_keying().owner_keys(None) == [ANONYMOUS_OWNER]

    monkeypatch.setenv(OWNER_SECRET_ENV, "short")
    with pytest.raises(OwnerSecretError):
        owner_keying()


async def test_a_keyed_front_finds_tasks_stored_under_legacy_keys_only_in_the_migration_window(
    open_front: OpenFront, temporal_client: Client
) -> None:
    alice, bob = (f"{who}-{uuid.uuid4().hex[:8]}@example.com" for who in ("alice", "bob"))
    auth = token_auth({"token-alice": alice, "token-bob": bob})
    # As `$MCP_TASKS_OWNER_SECRET` and `$MCP_TASKS_LEGACY_OWNER_KEYS` set them up: unset, set, set in the window.
    before = await open_front(auth=auth, owner_keying=OwnerKeying.of(None))
    keyed = await open_front(auth=auth, owner_keying=OwnerKeying.of(SECRET))
    migrating = await open_front(auth=auth, owner_keying=OwnerKeying.of(SECRET, "1"))
    async with before.http() as before_http, keyed.http() as keyed_http, migrating.http() as migrating_http:

        def as_alice(http: httpx.AsyncClient) -> TaskCalls:
            return TaskCalls(BearerMcp(before.url, http, "token-alice"))

        # A task stored before the secret was set, under the unkeyed key.
        old = (await as_alice(before_http).start("double", {"x": 1}))["taskId"]
        principal = principal_of(alice)
        stored = await temporal_client.get_workflow_handle(f"mcp-task/{legacy_owner_key(principal)}/{old}").describe()
        assert (await stored.memo())[Memo.OWNER] == legacy_owner_key(principal)

        assert (await as_alice(keyed_http).get(old)).error["code"] == -32602
        done = await as_alice(migrating_http).wait_for(old)
        assert done["status"] == "completed", done
        # The window opens no door between principals.
        assert (await TaskCalls(BearerMcp(migrating.url, migrating_http, "token-bob")).get(old)).error["code"] == -32602

        # A new task goes under the keyed hash, which nobody without the secret can compute from her name.
        new = (await as_alice(keyed_http).start("double", {"x": 2}))["taskId"]
        key = hmac.new(SECRET.encode(), b"mcp-tasks-temporal/owner\x00" + principal.encode(), hashlib.sha256)
        stored = await temporal_client.get_workflow_handle(f"mcp-task/{key.hexdigest()[:32]}/{new}").describe()
        assert (await stored.memo())[Memo.OWNER] == key.hexdigest()[:32]
        done = await as_alice(migrating_http).wait_for(new)
        assert done["status"] == "completed", done


def test_dev_keeps_one_owner_secret_per_state_directory_readable_by_its_owner_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Set, then removed, through monkeypatch: it then restores the variable as it was before the test, unset
    # included, whatever `use_dev_owner_secret` writes meanwhile (a secret left set would key later commands).
    monkeypatch.setenv(OWNER_SECRET_ENV, "")
    monkeypatch.delenv(OWNER_SECRET_ENV)
    fresh = tmp_path / "fresh"
    keyed = use_dev_owner_secret(DevSettings(state_dir=fresh))
    drawn = os.environ[OWNER_SECRET_ENV]  # for the worker `dev` starts
    assert keyed.owner_secret is not None and keyed.owner_secret.get_secret_value() == drawn
    assert len(drawn) >= MIN_SECRET_CHARS
    assert stat.S_IMODE((fresh / SECRET_FILE).stat().st_mode) == 0o600
    monkeypatch.delenv(OWNER_SECRET_ENV)
    use_dev_owner_secret(DevSettings(state_dir=fresh))  # a restart on the same state directory: the same keys
    assert os.environ[OWNER_SECRET_ENV] == drawn

    # A state directory with tasks from before keeps their unkeyed keys.
    monkeypatch.delenv(OWNER_SECRET_ENV)
    older = tmp_path / "older"
    older.mkdir()
    (older / DATABASE_FILE).write_bytes(b"")
    assert use_dev_owner_secret(DevSettings(state_dir=older)).owner_secret is None
    assert OWNER_SECRET_ENV not in os.environ and not (older / SECRET_FILE).exists()

    # A secret the environment sets wins.
    monkeypatch.setenv(OWNER_SECRET_ENV, SECRET)
    kept = use_dev_owner_secret(DevSettings(state_dir=fresh))
    assert kept.owner_secret is not None and kept.owner_secret.get_secret_value() == SECRET
