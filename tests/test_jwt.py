"""JWT bearer tokens signed by keys this test makes: identities, isolation, refusals, key rotation.

Through the in-process front (`auth=` as `--jwt-jwks` sets it up) and its workers; a bad setup stops the
`serve` command, a process of its own.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp.server.auth.settings import AuthSettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from mcp_tasks_temporal.front.http.endpoint import BearerAuth, protected_app
from mcp_tasks_temporal.front.http.jwt_auth import JwtSettings, JwtVerifier
from tests.bearer import BearerMcp, bearer
from tests.cli_runs import run_in_process, unkeyed_env
from tests.front_app import InProcessFront
from tests.legacy_wire import LegacyMcp
from tests.processes import CLI, FIXTURE_APP, REPO_ROOT
from tests.test_auth import ended_with
from tests.test_push import http_listen, listen_message
from tests.wire import TaskCalls, base_headers, request_message

pytestmark = pytest.mark.anyio

ISSUER = "https://idp.example.test/"
AUDIENCE = "mcp-tasks-tests"


class Signer:
    """An identity provider's signing key, with its public half in a JWKS."""

    def __init__(self) -> None:
        self.kid = uuid.uuid4().hex[:12]
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self) -> dict[str, Any]:
        return {**json.loads(RSAAlgorithm.to_jwk(self.key.public_key())), "kid": self.kid, "use": "sig"}

    def token(self, sub: str | None, **overrides: Any) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600, **overrides}
        claims = {name: value for name, value in claims.items() if value is not None}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})


def write_jwks(path: Path, *signers: Signer) -> None:
    path.write_text(json.dumps({"keys": [signer.jwk() for signer in signers]}))


@pytest.fixture(scope="module")
def signer() -> Signer:
    return Signer()


@pytest.fixture(scope="module")
def jwks(tmp_path_factory: pytest.TempPathFactory, signer: Signer) -> Path:
    path = tmp_path_factory.mktemp("jwt") / "jwks.json"
    write_jwks(path, signer)
    return path


@pytest.fixture(scope="module")
def front_settings(jwks: Path) -> dict[str, Any]:
    """One front for the module, as `--jwt-jwks`, `--jwt-issuer` and `--jwt-audience` set it up (no public URL,
    so no resource metadata). A test may add keys to the JWKS file, never remove `signer`'s."""
    return {"auth": BearerAuth(JwtVerifier(JwtSettings(jwks=str(jwks), issuer=ISSUER, audience=AUDIENCE)))}


@pytest.fixture
def secured(front: InProcessFront) -> str:
    return front.url


@pytest.fixture
def http(front_http: httpx.AsyncClient) -> httpx.AsyncClient:
    """The secured front's client: every request below goes to it."""
    return front_http


async def discover(url: str, http: httpx.AsyncClient, token: str | None) -> httpx.Response:
    body = request_message(1, "server/discover", None)
    auth = bearer(token) if token is not None else {}
    return await http.post(url, json=body, headers={**base_headers("server/discover"), **auth})


async def test_two_principals_each_see_only_their_own_tasks(
    secured: str, http: httpx.AsyncClient, signer: Signer
) -> None:
    alice = TaskCalls(BearerMcp(secured, http, signer.token("alice")))
    bob = TaskCalls(BearerMcp(secured, http, signer.token("bob")))
    task_id = (await alice.start("double", {"x": 21}))["taskId"]
    never_issued = "00000000-0000-4000-8000-000000000000"
    theirs, unknown = await bob.get(task_id), await bob.get(never_issued)
    assert theirs.error == unknown.error, "another principal's task must look exactly like an unknown one"
    assert theirs.error["code"] == -32602
    done = await alice.wait_for(task_id)
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == {"value": 42}


async def test_invalid_tokens_get_401(secured: str, http: httpx.AsyncClient, signer: Signer) -> None:
    assert (await discover(secured, http, signer.token("alice"))).status_code == 200
    an_hour_ago = int(time.time()) - 3600
    stranger = Signer()
    stranger.kid = signer.kid  # same key ID, different key: the signature must still fail
    refused = {
        "expired": signer.token("alice", iat=an_hour_ago - 600, exp=an_hour_ago),
        "wrong audience": signer.token("alice", aud="another-service"),
        "wrong issuer": signer.token("alice", iss="https://evil.example.test/"),
        "foreign key": stranger.token("alice"),
        "no subject": signer.token(None),
        "empty subject": signer.token(""),
        "not a JWT": "alice",
    }
    for reason, token in refused.items():
        response = await discover(secured, http, token)
        assert response.status_code == 401, reason
        assert response.headers["www-authenticate"].startswith("Bearer"), reason
    assert (await discover(secured, http, None)).status_code == 401
    probes = [await http.get(secured.replace("/mcp", path)) for path in ("/healthz", "/readyz")]
    assert [probe.status_code for probe in probes] == [200, 200], "orchestrators probe without a token"
    # No authorization server of our own exists, so none may be advertised.
    metadata = await http.get(secured.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
    assert metadata.status_code in (401, 404)
    assert "resource_metadata" not in (await discover(secured, http, None)).headers["www-authenticate"]


async def test_a_key_added_to_the_jwks_file_is_accepted_without_restart(
    secured: str, http: httpx.AsyncClient, signer: Signer, jwks: Path
) -> None:
    rotated = Signer()
    assert (await discover(secured, http, rotated.token("alice"))).status_code == 401
    write_jwks(jwks, rotated, signer)
    assert (await discover(secured, http, rotated.token("alice"))).status_code == 200
    assert (await discover(secured, http, signer.token("alice"))).status_code == 200, "the old key still verifies"


async def test_protected_resource_metadata_names_the_jwt_issuer(tmp_path: Path, signer: Signer) -> None:
    path = tmp_path / "jwks.json"
    write_jwks(path, signer)
    verifier = JwtVerifier(JwtSettings(jwks=str(path), issuer=ISSUER, audience=AUDIENCE))
    settings = AuthSettings(
        issuer_url=AnyHttpUrl(ISSUER),
        resource_server_url=AnyHttpUrl("https://mcp.example.test/mcp"),
        validate_token_resource=False,
    )
    app = protected_app(Starlette(), BearerAuth(verifier, settings=settings))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://mcp.example.test") as client:
        metadata = (await client.get("/.well-known/oauth-protected-resource/mcp")).json()
        challenge = (await client.post("/mcp")).headers["www-authenticate"]
    assert metadata["authorization_servers"] == [ISSUER]
    assert metadata["resource"] == "https://mcp.example.test/mcp"
    assert "/.well-known/oauth-protected-resource/mcp" in challenge


async def test_a_verifier_binds_the_configured_claim(tmp_path: Path, signer: Signer) -> None:
    path = tmp_path / "jwks.json"
    write_jwks(path, signer)
    verifier = JwtVerifier(JwtSettings(jwks=str(path), issuer=ISSUER, audience=AUDIENCE, principal_claim="email"))
    token = await verifier.verify_token(signer.token("opaque-id-1", email="alice@example.com", scope="tasks read"))
    assert token is not None
    assert (token.subject, token.scopes, token.claims) == ("alice@example.com", ["tasks", "read"], {"iss": ISSUER})
    assert await verifier.verify_token(signer.token("opaque-id-1")) is None, "a token without the claim is refused"


async def test_the_verifier_itself_refuses_expired_and_not_yet_valid_tokens(tmp_path: Path, signer: Signer) -> None:
    # The SDK's bearer middleware checks `expires_at` again, which hides an expiry bug from every
    # HTTP test; the codec server or another transport calls the verifier and trusts its answer alone.
    path = tmp_path / "jwks.json"
    write_jwks(path, signer)
    verifier = JwtVerifier(JwtSettings(jwks=str(path), issuer=ISSUER, audience=AUDIENCE, leeway_s=30))
    now = int(time.time())
    assert await verifier.verify_token(signer.token("alice")) is not None
    refused = {
        "expired beyond the leeway": signer.token("alice", iat=now - 3600, exp=now - 600),
        "not valid for another ten minutes": signer.token("alice", nbf=now + 600),
        "no expiry at all": signer.token("alice", exp=None),
    }
    for reason, token in refused.items():
        assert await verifier.verify_token(token) is None, reason


async def test_a_required_scope_is_enforced(tmp_path: Path, signer: Signer) -> None:
    path = tmp_path / "jwks.json"
    write_jwks(path, signer)
    verifier = JwtVerifier(JwtSettings(jwks=str(path), issuer=ISSUER, audience=AUDIENCE))
    app = protected_app(Starlette(), BearerAuth(verifier, required_scopes=("tasks",)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://front") as client:
        without = await client.post("/mcp", headers={"authorization": f"Bearer {signer.token('alice')}"})
        scoped = await client.post("/mcp", headers={"authorization": f"Bearer {signer.token('alice', scope='tasks')}"})
    assert without.status_code == 403
    assert scoped.status_code == 404, "past authentication, on to the (empty) MCP app"


class JwksServer:
    """An identity provider's JWKS endpoint on 127.0.0.1, counting the fetches."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = []
        self.fetches = 0


@pytest.fixture
def jwks_server() -> Iterator[tuple[JwksServer, str]]:
    state = JwksServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.fetches += 1
            body = json.dumps({"keys": state.keys}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    server.shutdown()
    server.server_close()
    thread.join(10)


async def test_jwks_from_a_url_is_cached_and_refetched_for_a_new_key(
    jwks_server: tuple[JwksServer, str], signer: Signer
) -> None:
    state, url = jwks_server
    state.keys = [signer.jwk()]
    verifier = JwtVerifier(JwtSettings(jwks=url, issuer=ISSUER, audience=AUDIENCE, refresh_cooldown_s=0))
    for _ in range(3):
        assert await verifier.verify_token(signer.token("alice")) is not None
    assert state.fetches == 1, "the key set is cached"
    rotated = Signer()
    state.keys = [rotated.jwk(), signer.jwk()]
    verified = await verifier.verify_token(rotated.token("alice"))
    assert verified is not None and verified.subject == "alice"
    assert state.fetches == 2, "an unknown kid fetches the key set again"


async def test_a_jwks_url_must_be_https_beyond_localhost() -> None:
    with pytest.raises(ValueError, match="https"):
        JwtSettings(jwks="http://idp.example.test/jwks.json", issuer=ISSUER, audience=AUDIENCE)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--jwt-jwks", "/nonexistent/jwks.json", "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE], "JWKS"),
        (["--jwt-jwks", "https://idp.example.test/jwks.json", "--jwt-audience", AUDIENCE], "--jwt-issuer"),
    ],
    ids=["missing key set", "no issuer"],
)
def test_a_bad_jwt_setup_stops_the_front_with_one_line(flags: list[str], named: str) -> None:
    # Refused before any connection: the unreachable Temporal address is never tried.
    command = [*CLI, "serve", "--app", FIXTURE_APP, "--temporal", "127.0.0.1:1", *flags]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("mcp-tasks-temporal: ") and len(done.stderr.strip().splitlines()) == 1
    assert named in done.stderr


async def test_operators_name_a_jwt_principal_by_its_claim_and_the_issuer(
    secured: str, http: httpx.AsyncClient, signer: Signer, temporal: str
) -> None:
    who = f"carol-{uuid.uuid4().hex[:8]}"
    carol = TaskCalls(BearerMcp(secured, http, signer.token(who)))
    task_id = (await carol.start("double", {"x": 2}))["taskId"]
    assert (await carol.wait_for(task_id))["status"] == "completed"

    unkeyed = unkeyed_env()  # the operator keys owners as the front does

    async def listed(*extra: str, env: dict[str, str] | None = None) -> list[str]:
        args = ["admin", "tasks", "--json", "--temporal", temporal, "--owner", who, *extra]
        run = await run_in_process(args, stdin="", env=env or unkeyed)
        assert run.code == 0, run.err
        return [task["taskId"] for task in run.json()["tasks"]]

    with anyio.fail_after(30):  # visibility lags the workflow by up to a second
        while await listed("--jwt-issuer", ISSUER) != [task_id]:
            await anyio.sleep(0.2)
    assert await listed(env={**unkeyed, "MCP_TASKS_JWT_ISSUER": ISSUER}) == [task_id]
    assert await listed() == [], "without the issuer the name is a token-file principal's"
    audit = ["audit", task_id, "--principal", who, "--jwt-issuer", ISSUER, "--format", "json", "--temporal", temporal]
    story = await run_in_process(audit, stdin="", env=unkeyed)
    assert story.code == 0, story.err
    assert story.json()["task"]["taskId"] == task_id


async def test_streams_end_when_their_jwt_expires(
    secured: str, http: httpx.AsyncClient, signer: Signer, gate: Path
) -> None:
    erin = TaskCalls(BearerMcp(secured, http, signer.token("erin")))
    listened_task = (await erin.start("gated", {"gate": str(gate)}))["taskId"]
    legacy = LegacyMcp(secured, http, headers=bearer(signer.token("erin")))
    created = await legacy.request("tools/call", {"name": "gated", "arguments": {"gate": str(gate)}, "task": {}})
    polled = created.result["task"]["taskId"]
    # Erin's streams open on a token good for a second or two more (`exp` counts whole seconds).
    expires_at = int(time.time()) + 2
    token = signer.token("erin", exp=expires_at)
    legacy.extra_headers.update(bearer(token))
    with anyio.fail_after(20):
        async with (
            http_listen(secured, http, listen_message([listened_task]), token=token) as listened,
            legacy.stream("tasks/result", {"taskId": polled}) as long_poll,
        ):
            assert (await anext(listened))["params"]["notifications"]["taskIds"] == [listened_task]
            for frames in (listened, long_poll):
                error = await ended_with(frames)
                assert error["code"] == -32600 and error["data"] == {"reason": "credential_expired"}
                assert time.time() >= expires_at
    # A request made in exp's own second is still let in by the SDK's check, then ended at once by the front.
    await anyio.sleep(max(0.0, expires_at + 1 - time.time()))
    assert (await TaskCalls(BearerMcp(secured, http, token)).get(listened_task)).status == 401
