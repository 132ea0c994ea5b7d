"""Authentication with unkeyed owner keys is refused, and so is a front whose owner keying its queue's others do not
share: whoever sees workflow IDs could tell whose tasks they are, and a front under another secret sees none of the
others' tasks.

`serve` (a process: its refusal, its exit status and its one line are the behaviour), `mcp_endpoint` (the library:
refused unless told otherwise), `dev` (goes on), and the fingerprint fronts compare, which says nothing of the secret.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import replace
from pathlib import Path

import anyio
import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from temporalio.client import Client

from mcp_tasks_temporal import BearerAuth, FrontSettings, OwnerKeying, mcp_endpoint
from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from mcp_tasks_temporal.ops.server_commands import bearer_auth
from mcp_tasks_temporal.temporal.ids import UNKEYED
from mcp_tasks_temporal.temporal.payload_storage import StorageSettings
from mcp_tasks_temporal.temporal.queue_fronts import running_fronts
from mcp_tasks_temporal.temporal.shared_settings import SharedSettings, disagreement
from tests.app_workers import new_task_queue
from tests.cli_runs import settings_of
from tests.front_app import fresh_app, in_process_front
from tests.processes import CLI, FIXTURE_APP, REPO_ROOT, child_env, free_port, start_front

pytestmark = pytest.mark.anyio

SECRET = "s3cret-for-the-tests-" + "x" * 16
OTHER_SECRET = "another-secret-of-the-tests-" + "y" * 16
REFUSED_WITHIN_S = 60
"""A refused `serve` exits after its imports (and, for a disagreement, one describe)."""


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text("alice-token-3c1b9e alice@example.com\n")
    return path


def without_unkeyed_consent(**extra: str) -> dict[str, str]:
    """A child's environment as a deployment's: no owner secret unless given, and no consent to unkeyed keys."""
    env = {name: value for name, value in child_env().items() if name != "MCP_TASKS_OWNER_SECRET"}
    return {**env, "MCP_TASKS_ALLOW_UNKEYED_OWNER_KEYS": "0", **extra}


async def serve_refused(temporal: str, queue: str, env: dict[str, str], *flags: str) -> str:
    """`serve` with `flags` on `queue`, which must exit 2 with one line; that line."""
    argv = [*CLI, "serve", "--temporal", temporal, "--task-queue", queue, "--app", FIXTURE_APP]
    argv += ["--port", str(free_port()), *flags]
    with anyio.fail_after(REFUSED_WITHIN_S):
        done = await anyio.run_process(argv, cwd=REPO_ROOT, env=env, check=False)
    lines = [line for line in done.stderr.decode().splitlines() if line.startswith("mcp-tasks-temporal: ")]
    assert done.returncode == 2 and len(lines) == 1, done.stderr.decode()
    return lines[0]


async def test_serve_with_tokens_and_no_owner_secret_refuses_to_start_naming_the_variable(
    temporal: str, tokens: Path
) -> None:
    line = await serve_refused(temporal, new_task_queue(), without_unkeyed_consent(), "--tokens", str(tokens))
    assert line.startswith("mcp-tasks-temporal: --tokens needs $MCP_TASKS_OWNER_SECRET: "), line
    assert "secrets.token_urlsafe(32)" in line and "docs/operations.md, 'Owner keys'" in line, line


def test_jwt_too_needs_the_owner_secret_and_dev_goes_on_without_it(
    tokens: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TASKS_OWNER_SECRET", raising=False)
    monkeypatch.delenv("MCP_TASKS_ALLOW_UNKEYED_OWNER_KEYS", raising=False)
    jwks = tmp_path / "jwks.json"
    public = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    jwks.write_text(json.dumps({"keys": [{**json.loads(RSAAlgorithm.to_jwk(public)), "kid": "k1"}]}))
    jwt = ["--jwt-jwks", str(jwks), "--jwt-issuer", "https://idp.example.test/", "--jwt-audience", "tasks"]
    with pytest.raises(ValueError, match=r"^--jwt-jwks needs \$MCP_TASKS_OWNER_SECRET: "):
        bearer_auth(settings_of(["serve", "--app", FIXTURE_APP, *jwt]))
    # A state directory from before `dev` drew its secret keeps its tasks' unkeyed keys, and `dev` serves them.
    assert bearer_auth(settings_of(["dev", "--tokens", str(tokens)])) is not None
    monkeypatch.setenv("MCP_TASKS_OWNER_SECRET", SECRET)
    assert bearer_auth(settings_of(["serve", "--app", FIXTURE_APP, "--tokens", str(tokens)])) is not None
    monkeypatch.delenv("MCP_TASKS_OWNER_SECRET")
    monkeypatch.setenv("MCP_TASKS_ALLOW_UNKEYED_OWNER_KEYS", "1")
    assert bearer_auth(settings_of(["serve", "--app", FIXTURE_APP, "--tokens", str(tokens)])) is not None, (
        "the consent, given"
    )


async def test_a_front_whose_owner_secret_differs_from_a_running_fronts_refuses_to_start(
    temporal: str, app_client: Client, tokens: Path
) -> None:
    queue = new_task_queue("owners")
    async with in_process_front(fresh_app(), app_client, task_queue=queue, owner_keying=OwnerKeying.of(SECRET)):
        with anyio.fail_after(REFUSED_WITHIN_S):
            while not await running_fronts(app_client, queue):
                await anyio.sleep(0.1)
        other = without_unkeyed_consent(MCP_TASKS_OWNER_SECRET=OTHER_SECRET)
        line = await serve_refused(temporal, queue, other, "--tokens", str(tokens))
        assert line.startswith("mcp-tasks-temporal: owner keys: this serve and front pid "), line
        assert "key them under different $MCP_TASKS_OWNER_SECRET values" in line, line
        assert OTHER_SECRET not in line and SECRET not in line
        unkeyed = await serve_refused(temporal, queue, child_env())
        assert "this serve has no $MCP_TASKS_OWNER_SECRET (unkeyed owner keys)" in unkeyed, unkeyed


async def test_serve_on_a_queue_no_worker_polls_logs_it_at_start_and_is_not_ready(workdir: Path, temporal: str) -> None:
    queue = new_task_queue("serve-unpolled")
    front, url = start_front(workdir, temporal, queue)
    try:
        async with httpx.AsyncClient() as http:
            response = await http.get(url.removesuffix("/mcp") + "/readyz")
        assert response.status_code == 503 and queue in response.json()["reason"], response.text
        assert (
            f"WARNING mcp_tasks_temporal.front.gateway.queue_watch: no worker polls task queue {queue} "
            f"(namespace default): tasks created on it wait, working, until one does; start a worker with "
            f"--task-queue {queue}, or give this front the workers' queue"
        ) in front.log(), front.log()
    finally:
        front.stop()


async def test_the_library_refuses_auth_with_unkeyed_owner_keys_unless_told(
    app_client: Client, tokens: Path, caplog: pytest.LogCaptureFixture
) -> None:
    auth = BearerAuth(StaticTokenVerifier.from_file(tokens))
    with pytest.raises(ValueError, match=r"^bearer authentication needs keyed owner keys: ") as refusal:
        mcp_endpoint(fresh_app(), app_client, auth=auth)
    assert "FrontSettings(owner_keying=OwnerKeying.of(secret))" in str(refusal.value)
    assert "allow_unkeyed_owner_keys=True" in str(refusal.value)
    caplog.set_level(logging.WARNING, logger="mcp_tasks_temporal.front.http.endpoint")
    mcp_endpoint(fresh_app(), app_client, auth=auth, allow_unkeyed_owner_keys=True)
    assert any("unkeyed owner keys (allow_unkeyed_owner_keys=True)" in r.getMessage() for r in caplog.records)
    caplog.clear()
    settings = FrontSettings(owner_keying=OwnerKeying.of(SECRET))
    mcp_endpoint(fresh_app(), app_client, auth=auth, settings=settings)
    mcp_endpoint(fresh_app(), app_client)  # no auth: every caller is anonymous, and the task ID the capability
    assert not caplog.records


def test_the_owner_keying_fingerprint_tells_secrets_apart_and_nothing_more() -> None:
    one, same, other = OwnerKeying.of(SECRET), OwnerKeying.of(SECRET), OwnerKeying.of(OTHER_SECRET)
    assert one.fingerprint() == same.fingerprint() != other.fingerprint()
    assert UNKEYED.fingerprint() == "unkeyed" and len(one.fingerprint()) == 16
    assert SECRET not in one.fingerprint() and one.fingerprint() not in (one.owner_key("alice"), one.owner_key(""))
    assert OwnerKeying.of(SECRET, "1").fingerprint() == one.fingerprint(), "the migration window keys the same"


def test_owner_keys_are_compared_between_fronts_only() -> None:
    def card(role: str, owner_keys: str | None) -> SharedSettings:
        held = SharedSettings.of(role, StorageSettings(), None, None if role == "serve" else "", owner_keys=owner_keys)
        return replace(held, writer=f"{role} pid {uuid.uuid4().int % 10_000} on h")

    keyed, unkeyed = OwnerKeying.of(SECRET).fingerprint(), UNKEYED.fingerprint()
    assert disagreement(card("serve", keyed), card("serve", keyed)) is None
    assert disagreement(card("serve", keyed), card("worker", None)) is None, "a worker keys no owner"
    assert "has none (unkeyed owner keys)" in (disagreement(card("serve", keyed), card("serve", unkeyed)) or "")
    differ = disagreement(card("serve", keyed), card("serve", OwnerKeying.of(OTHER_SECRET).fingerprint()))
    assert differ is not None and "each would see only the tasks created through itself" in differ, differ
    old = '{"mcp-tasks-settings":1,"storage":"none","threshold":null,"codec":[],"deployment":null,"writer":"w"}'
    assert SharedSettings.from_card(old) == SharedSettings("none", None, [], None, "w"), "an earlier version's card"
    later = old.replace('"writer"', '"added_later":7,"writer"')
    assert SharedSettings.from_card(later) == SharedSettings("none", None, [], None, "w"), "a later version's card"
