"""Encrypted payloads: what Temporal stores is ciphertext; clients with the key see everything as before.

End to end through the in-process front and workers on a client with the codec, as `--codec-key-file`
sets them up; an operator's `audit` runs in this process too, and the `codec-server` command as a process.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import socket
import uuid
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.converter import ActivitySerializationContext, PayloadCodec, WorkflowSerializationContext

from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from mcp_tasks_temporal.ops.codec_server import codec_app
from mcp_tasks_temporal.temporal.codec import (
    ALLOW_PLAINTEXT_ENV,
    BINDING_METADATA,
    ENCODING,
    KEY_ID_METADATA,
    AesGcmCodec,
    CodecError,
    key_id,
    load_codec,
    new_key,
    parse_keys,
)
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.cli_runs import run_in_process, unkeyed_env
from tests.conftest import OpenApp, OpenFront
from tests.processes import CLI, FIXTURE_APP, Process, free_port, wait_until
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio


class Rot13Codec(PayloadCodec):
    """A stand-in for a user's own codec (a KMS-backed one, say), loaded by --codec."""

    async def encode(self, payloads: Any) -> list[Payload]:
        return list(payloads)

    async def decode(self, payloads: Any) -> list[Payload]:
        return list(payloads)


rot13 = Rot13Codec()
NONCE_BYTES = 12
"""GCM's 96-bit nonce, which the codec writes in front of the ciphertext."""


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode())


# -- the codec itself -------------------------------------------------------------------


async def test_payloads_are_sealed_whole_and_open_again() -> None:
    key = secrets.token_bytes(32)
    codec = AesGcmCodec([key])
    [sealed] = await codec.encode([plain("launch code 1234")])
    assert b"launch code" not in sealed.SerializeToString() and b"json/plain" not in sealed.SerializeToString()
    assert sealed.metadata["encoding"] == ENCODING
    assert sealed.metadata[KEY_ID_METADATA].decode() == key_id(key) != base64.b64encode(key).decode()
    [opened] = await codec.decode([sealed])
    assert opened == plain("launch code 1234")
    # A plaintext payload (a history from before encryption was on) reads as it is.
    assert await codec.decode([plain("old")]) == [plain("old")]


async def test_rotation_encrypts_with_the_first_key_and_decrypts_with_any() -> None:
    old, new = secrets.token_bytes(32), secrets.token_bytes(32)
    [before] = await AesGcmCodec([old]).encode([plain("before rotation")])
    rotated = AesGcmCodec([new, old])
    [after] = await rotated.encode([plain("after rotation")])
    assert after.metadata[KEY_ID_METADATA].decode() == key_id(new) == rotated.encrypting_key_id
    assert await rotated.decode([before, after]) == [plain("before rotation"), plain("after rotation")]
    with pytest.raises(CodecError, match=key_id(old)):
        await AesGcmCodec([new]).decode([before])  # the old key was dropped too early


async def test_every_encryption_draws_a_fresh_nonce() -> None:
    # GCM under one key with a repeated nonce gives away the keystream and the authentication key:
    # the same payload sealed twice, or by two processes sharing the key, must never share a nonce.
    key = secrets.token_bytes(32)
    front, worker = AesGcmCodec([key]), AesGcmCodec([key])
    same = plain("the same answer, sent again")
    sealed = [*await front.encode([same, same]), *await front.encode([same]), *await worker.encode([same])]
    nonces = [payload.data[:NONCE_BYTES] for payload in sealed]
    assert len(set(nonces)) == len(sealed), "a nonce was used twice under one key"
    assert len({payload.data[NONCE_BYTES:] for payload in sealed}) == len(sealed)
    assert await front.decode(sealed) == [same] * len(sealed)


async def test_a_tampered_payload_is_refused() -> None:
    codec = AesGcmCodec([secrets.token_bytes(32)])
    [sealed] = await codec.encode([plain("amount: 10")])
    flipped = bytearray(sealed.data)
    flipped[-1] ^= 1
    tampered = Payload(metadata=dict(sealed.metadata), data=bytes(flipped))
    with pytest.raises(CodecError):
        await codec.decode([tampered])


def task_context(task: str, namespace: str = "default") -> WorkflowSerializationContext:
    return WorkflowSerializationContext(namespace=namespace, workflow_id=f"mcp-task/owner/{task}")


async def test_a_payload_is_sealed_for_its_workflow_and_opens_nowhere_else() -> None:
    codec = AesGcmCodec([secrets.token_bytes(32)])
    mine, theirs = codec.with_context(task_context("mine")), codec.with_context(task_context("theirs"))
    [sealed] = await mine.encode([plain("my result")])
    assert sealed.metadata[BINDING_METADATA] == b"default/mcp-task/owner/mine"
    assert await mine.decode([sealed]) == [plain("my result")]
    # Copied into another task's history or storage: refused, never read as that task's.
    with pytest.raises(CodecError):
        await theirs.decode([sealed])
    with pytest.raises(CodecError):
        await codec.with_context(task_context("mine", namespace="other")).decode([sealed])
    # Its binding rewritten to the other task's: the authentication fails.
    rebound = Payload(
        metadata={**sealed.metadata, BINDING_METADATA: b"default/mcp-task/owner/theirs"}, data=sealed.data
    )
    with pytest.raises(CodecError):
        await theirs.decode([rebound])
    # An activity of the task, and a read that names no workflow (a Nexus payload, a listing), open it too.
    activity = ActivitySerializationContext(
        namespace="default",
        activity_id="1",
        activity_type="run",
        activity_task_queue="q",
        workflow_id="mcp-task/owner/mine",
        workflow_type="t",
        is_local=False,
    )
    assert await codec.with_context(activity).decode([sealed]) == [plain("my result")]
    assert await codec.decode([sealed]) == [plain("my result")]


async def test_payloads_sealed_before_the_binding_still_open() -> None:
    key = secrets.token_bytes(32)
    kid = key_id(key).encode()
    nonce = secrets.token_bytes(NONCE_BYTES)
    # Format 1, as the codec wrote it before: the key ID alone as associated data.
    sealed = AESGCM(key).encrypt(nonce, plain("from before").SerializeToString(), kid)
    legacy = Payload(metadata={"encoding": ENCODING, KEY_ID_METADATA: kid}, data=nonce + sealed)
    codec = AesGcmCodec([key])
    assert await codec.with_context(task_context("any")).decode([legacy]) == [plain("from before")]


async def test_a_plaintext_payload_where_a_workflows_ciphertext_belongs_is_refused() -> None:
    codec = AesGcmCodec([secrets.token_bytes(32)])
    with pytest.raises(CodecError):
        await codec.with_context(task_context("mine")).decode([plain("written around the codec")])
    # During a migration from plaintext histories, an operator lets them through on purpose.
    migrating = AesGcmCodec([secrets.token_bytes(32)], allow_plaintext=True)
    assert await migrating.with_context(task_context("mine")).decode([plain("old")]) == [plain("old")]
    loaded = load_codec(environ={"MCP_TASKS_CODEC_KEYS": new_key(), ALLOW_PLAINTEXT_ENV: "1"})
    assert isinstance(loaded, AesGcmCodec)
    assert await loaded.with_context(task_context("mine")).decode([plain("old")]) == [plain("old")]


def test_key_files_take_base64_keys_one_per_line_with_comments(tmp_path: Path) -> None:
    first, second = new_key(), new_key()
    urlsafe = base64.urlsafe_b64encode(base64.b64decode(second)).decode().rstrip("=")
    assert parse_keys(f"# rotated 2026-01\n{first}\n\n{urlsafe}  # previous\n") == [
        base64.b64decode(first),
        base64.b64decode(second),
    ]
    with pytest.raises(CodecError, match="32"):
        parse_keys(base64.b64encode(b"short").decode())
    with pytest.raises(CodecError, match="base64"):
        parse_keys("not*base64")
    key_file = tmp_path / "keys"
    key_file.write_text(f"{first}\n")
    assert isinstance(load_codec(key_file=key_file, environ={}), AesGcmCodec)
    assert isinstance(load_codec(environ={"MCP_TASKS_CODEC_KEYS": f"{first},{second}"}), AesGcmCodec)
    assert load_codec(environ={}) is None
    (tmp_path / "empty").write_text("# nothing yet\n")
    with pytest.raises(CodecError):
        load_codec(key_file=tmp_path / "empty", environ={})


def test_codec_flag_loads_any_payload_codec() -> None:
    assert load_codec(spec="tests.test_codec:rot13", environ={}) is rot13
    assert isinstance(load_codec(spec="tests.test_codec:Rot13Codec", environ={}), Rot13Codec)  # a factory
    for bad in ("tests.test_codec:plain_text", "tests.test_codec", "no_such_module:codec"):
        with pytest.raises(CodecError):
            load_codec(spec=bad, environ={})
    with pytest.raises(CodecError, match="exclude"):
        load_codec(spec="tests.test_codec:rot13", environ={"MCP_TASKS_CODEC_KEYS": new_key()})


plain_text = "not a codec"


# -- end to end: front and worker encrypt, the history holds no plaintext ---------------


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("codec") / "keys"
    path.write_text(f"{new_key()}\n{new_key()}\n")
    return path


def _key_file_codec(key_file: Path) -> PayloadCodec:
    """The codec `--codec-key-file` loads."""
    codec = load_codec(key_file=key_file, environ={})
    assert codec is not None
    return codec


@pytest.fixture(scope="module")
async def app_client(temporal: str, key_file: Path) -> Client:
    """The in-process workers' and fronts' client, with the key file's codec."""
    return await connect_temporal(temporal, codec=_key_file_codec(key_file))


@pytest.fixture
def encrypted(front_mcp: TaskCalls) -> TaskCalls:
    """The task operations on the front whose client encrypts, its workers likewise."""
    return front_mcp


UI = "https://ui.example"
OPERATOR_TOKEN = secrets.token_urlsafe(16)


@pytest.fixture
async def codec_http(key_file: Path) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client of the codec server's app, as `codec-server --tokens --ui-origin` sets it up."""
    verifier = StaticTokenVerifier({OPERATOR_TOKEN: "operator"})
    app = codec_app(_key_file_codec(key_file), ui_origins=[UI], verifier=verifier)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://codec") as http:
        yield http


@pytest.fixture
def codec_server(workdir: Path, key_file: Path, tmp_path: Path) -> Generator[tuple[str, str]]:
    token = secrets.token_urlsafe(16)
    tokens = tmp_path / "codec-tokens"
    tokens.write_text(f"{token} operator\n")
    port = free_port()
    command = [*CLI, "codec-server", "--codec-key-file", str(key_file), "--port", str(port)]
    command += ["--tokens", str(tokens), "--ui-origin", UI]
    process = Process(f"codec-server-{port}", command, workdir / f"codec-server-{port}.log").start()
    try:

        def listening() -> bool:
            if not process.alive:
                raise RuntimeError(f"codec server exited:\n{process.log()}")
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, timeout=30, what="the codec server")
        yield f"http://127.0.0.1:{port}", token
    finally:
        process.stop()


async def _run_vault(mcp: TaskCalls, codeword: str, passphrase: str) -> tuple[str, dict[str, Any]]:
    created = await mcp.start("vault", {"codeword": codeword}, capabilities={"elicitation": {}})
    task_id = created["taskId"]
    waiting = await mcp.wait_for(task_id, {"input_required"})
    [(key, request)] = waiting["inputRequests"].items()
    assert request["params"]["message"] == f"Passphrase for {codeword}-question?"
    await mcp.update(task_id, {key: {"action": "accept", "content": {"passphrase": passphrase}}})
    done = await mcp.wait_for(task_id)
    assert done["status"] == "completed", done
    return task_id, done


async def _raw_history(temporal: str, task_id: str) -> tuple[bytes, list[Any]]:
    """Everything Temporal stores of the task, read with a client that has no codec."""
    handle = (await Client.connect(temporal)).get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    history = await handle.fetch_history()
    description = await handle.describe()
    stored = b"".join(event.SerializeToString() for event in history.events)
    return stored + description.raw_description.SerializeToString(), list(history.events)


def _started_payload(events: list[Any]) -> dict[str, Any]:
    """The payload that started the task, as the Web UI sends it to the codec server."""
    [started] = [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED]
    [payload] = started.workflow_execution_started_event_attributes.input.payloads
    assert payload.metadata["encoding"] == ENCODING
    metadata = {name: base64.b64encode(value).decode() for name, value in payload.metadata.items()}
    return {"metadata": metadata, "data": base64.b64encode(payload.data).decode()}


async def test_the_history_holds_no_argument_question_answer_or_result_in_plaintext(
    encrypted: TaskCalls, open_app: OpenApp, temporal_client: Client, temporal: str, codec_http: httpx.AsyncClient
) -> None:
    codeword, passphrase = f"zebra{uuid.uuid4().hex}", f"otter{uuid.uuid4().hex}"
    task_id, done = await _run_vault(encrypted, codeword, passphrase)
    assert done["result"]["content"][0]["text"] == f"opened {codeword}-result with {passphrase}"  # tasks/get decrypts

    stored, events = await _raw_history(temporal, task_id)
    assert codeword.encode() not in stored and passphrase.encode() not in stored

    # The same task without a codec: the check above would have seen the text.
    plain = await open_app(FIXTURE_APP, client=temporal_client)
    async with plain.http() as http:
        control_id, _ = await _run_vault(plain.calls(http), codeword, passphrase)
    control, _ = await _raw_history(temporal, control_id)
    for text in (codeword, f"{codeword}-question", f"{codeword}-result", passphrase):
        assert text.encode() in control

    # An operator's Web UI asks the codec server to decode the payload that started the task.
    body: dict[str, Any] = {"payloads": [_started_payload(events)]}
    ui = {"origin": UI, "x-namespace": "default"}
    bearer = {"authorization": f"Bearer {OPERATOR_TOKEN}"}
    decoded = await codec_http.post("/decode", json=body, headers={**ui, **bearer})
    assert decoded.status_code == 200, decoded.text
    assert decoded.headers["access-control-allow-origin"] == UI
    [opened] = decoded.json()["payloads"]
    assert base64.b64decode(opened["metadata"]["encoding"]) == b"json/plain"
    assert json.loads(base64.b64decode(opened["data"]))["arguments"] == {"codeword": codeword}
    templated = await codec_http.post("/default/decode", json=body, headers=bearer)
    assert templated.json() == decoded.json()
    assert (await codec_http.post("/decode", content=b"{not json", headers=bearer)).status_code == 400
    unknown_key = {**body["payloads"][0]["metadata"], KEY_ID_METADATA: base64.b64encode(b"0123456789abcdef").decode()}
    foreign_key = {"payloads": [{**body["payloads"][0], "metadata": unknown_key}]}
    assert (await codec_http.post("/decode", json=foreign_key, headers=bearer)).status_code == 400
    assert (await codec_http.post("/decode", json=body, headers=ui)).status_code == 401
    wrong = await codec_http.post("/decode", json=body, headers={**ui, "authorization": "Bearer guess"})
    assert wrong.status_code == 401
    preflight = await codec_http.options(
        "/decode",
        headers={**ui, "access-control-request-method": "POST", "access-control-request-headers": "authorization"},
    )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == UI
    foreign = await codec_http.options(
        "/decode", headers={"origin": "https://evil.example", "access-control-request-method": "POST"}
    )
    assert "access-control-allow-origin" not in foreign.headers


async def test_the_codec_server_command_decodes_for_the_ui_with_its_flags(
    encrypted: TaskCalls, temporal: str, http: httpx.AsyncClient, codec_server: tuple[str, str]
) -> None:
    """The `codec-server` command itself, a process: its key file, token file and UI origin reach the app."""
    task_id = (await encrypted.start("double", {"x": 3}))["taskId"]
    _, events = await _raw_history(temporal, task_id)
    body = {"payloads": [_started_payload(events)]}
    url, token = codec_server
    ui = {"origin": UI, "x-namespace": "default"}
    decoded = await http.post(f"{url}/decode", json=body, headers={**ui, "authorization": f"Bearer {token}"})
    assert decoded.status_code == 200, decoded.text
    assert decoded.headers["access-control-allow-origin"] == UI
    [opened] = decoded.json()["payloads"]
    assert json.loads(base64.b64decode(opened["data"]))["arguments"]["x"] == 3
    assert (await http.post(f"{url}/decode", json=body, headers=ui)).status_code == 401


async def test_an_operators_audit_with_the_key_reads_what_the_history_hides(
    encrypted: TaskCalls, temporal: str, key_file: Path
) -> None:
    codeword, passphrase = f"heron{uuid.uuid4().hex}", f"badger{uuid.uuid4().hex}"
    task_id, _ = await _run_vault(encrypted, codeword, passphrase)
    audit = ["audit", task_id, "--format", "json", "--temporal", temporal]
    opened = await run_in_process([*audit, "--codec-key-file", str(key_file)], stdin="", env=unkeyed_env())
    sealed = await run_in_process(audit, stdin="", env=unkeyed_env())
    assert opened.code == 0, opened.err
    for text in (codeword, passphrase, f"opened {codeword}-result"):
        assert text in opened.out
    assert codeword not in sealed.out + sealed.err, "without the key nothing is readable"
    assert sealed.code == 2, sealed.err
    [line] = sealed.err.strip().splitlines()
    assert "encrypted" in line and "--codec-key-file" in line, line


async def test_a_running_tasks_question_and_status_are_encrypted_at_rest(encrypted: TaskCalls, temporal: str) -> None:
    codeword = f"heron{uuid.uuid4().hex}"
    created = await encrypted.start("vault", {"codeword": codeword}, capabilities={"elicitation": {}})
    waiting = await encrypted.wait_for(created["taskId"], {"input_required"})
    assert codeword in json.dumps(waiting["inputRequests"])
    # The memo (questions, status) and the running tool's heartbeat, as a client without the key sees them.
    stored, _ = await _raw_history(temporal, created["taskId"])
    assert codeword.encode() not in stored
    await encrypted.cancel(created["taskId"])
    assert (await encrypted.wait_for(created["taskId"], {"cancelled"}))["status"] == "cancelled"


async def test_a_tools_error_message_stays_out_of_the_history(encrypted: TaskCalls, temporal: str) -> None:
    secret = f"ledger{uuid.uuid4().hex}"
    created = await encrypted.start("protocol_error", {"code": -32042, "message": f"refused account {secret}"})
    failed = await encrypted.wait_for(created["taskId"])
    assert failed["status"] == "failed" and failed["error"]["code"] == -32042
    assert secret in failed["error"]["message"]
    stored, _ = await _raw_history(temporal, created["taskId"])
    assert secret.encode() not in stored


async def test_a_front_server_without_the_key_answers_a_json_rpc_error(
    encrypted: TaskCalls, open_front: OpenFront, temporal: str, caplog: pytest.LogCaptureFixture
) -> None:
    created = await encrypted.start("double", {"x": 2})
    # On the workers' own queue it would be refused at start (tests/test_shared_settings.py); a front of
    # another app's queue in the namespace still reads the task by its ID.
    other_keys = await connect_temporal(temporal, codec=load_codec(environ={"MCP_TASKS_CODEC_KEYS": new_key()}))
    other = await open_front(client=other_keys, task_queue=f"other-{uuid.uuid4()}")
    with caplog.at_level(logging.WARNING):
        async with other.http() as http:
            reply = await other.calls(http).get(created["taskId"])
    assert reply.status == 200 and reply.error["code"] == -32603
    assert any("cannot decrypt" in record.getMessage() for record in caplog.records)  # the operator's log


async def test_another_tasks_sealed_memo_under_a_task_id_is_refused_not_shown(
    encrypted: TaskCalls, temporal: str
) -> None:
    # An input and result no task ID will contain by chance (nine digits in a row), so neither may show here.
    theirs = (await encrypted.start("double", {"x": 987654321}))["taskId"]
    assert (await encrypted.wait_for(theirs))["status"] == "completed"
    raw = Client(  # no codec: the memo as Temporal stores it, ciphertext sealed for their task's workflow
        (await Client.connect(temporal)).service_client, namespace="default"
    )
    info = (await raw.get_workflow_handle(UNKEYED.workflow_id(theirs, None)).describe()).raw_description
    sealed = dict(info.workflow_execution_info.memo.fields)
    assert sealed and all(payload.metadata["encoding"] == ENCODING for payload in sealed.values())

    # Their memo's ciphertext, copied whole under another task ID (as write access to the database could).
    mine = str(uuid.uuid4())
    handle = await raw.start_workflow(
        "mcp_tasks.NoSuchWorkflow", id=UNKEYED.workflow_id(mine, None), task_queue=f"nobody-{mine}", memo=sealed
    )
    try:
        reply = await encrypted.get(mine)
        assert reply.error["code"] == -32603, reply.body  # refused: sealed for another workflow
        assert mine in reply.error["message"]
        body = json.dumps(reply.body)
        assert "987654321" not in body and "1975308642" not in body and theirs not in body
    finally:
        await handle.terminate()
