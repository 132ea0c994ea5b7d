"""Payload encryption: what Temporal stores of a task is ciphertext unless you hold a key.

The built-in codec is AES-256-GCM. A key is 32 random bytes written as base64 (one per
line in the key file, or comma-separated in `MCP_TASKS_CODEC_KEYS`); the first key
encrypts, every key decrypts, so a new key goes first and the old ones stay listed
until no history that needs them is retained. Each encrypted payload names its key by
an id derived from the key (never the key itself) in its metadata, and the whole
original payload, metadata included, is what gets encrypted.

A payload is sealed for its workflow (format 2): the namespace and workflow ID of
Temporal's serialization context go into its metadata and into AES-GCM's associated
data, so a ciphertext copied into another task's history or storage fails to open
there, and its binding cannot be rewritten. Decoding checks the binding wherever
the SDK names a workflow (results, memos, signals, activities); where it names
none (a Nexus operation's payloads, a listing across tasks) the binding is still
authenticated, only not compared. Payloads sealed before (format 1, no binding)
still open. A payload that is not encrypted where a workflow's payload is expected
is refused, unless `MCP_TASKS_CODEC_ALLOW_PLAINTEXT=1` (while histories from before
encryption was switched on are still retained).

`--codec MODULE:ATTR` plugs in any other `temporalio.converter.PayloadCodec`
(a KMS-backed one, for example) instead.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Self

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ActivitySerializationContext,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

from mcp_tasks_temporal.temporal.contract import CODEC_KEYS_ENV as KEYS_ENV

ENCODING = b"binary/encrypted"
KEY_ID_METADATA = "encryption-key-id"
FORMAT_METADATA = "encryption-format"
BINDING_METADATA = "encryption-binding"
"""`<namespace>/<workflow ID>` a format-2 payload was sealed for; absent when sealed outside any workflow."""
FORMAT_BOUND = b"2"
ALLOW_PLAINTEXT_ENV = "MCP_TASKS_CODEC_ALLOW_PLAINTEXT"
_NONCE_BYTES = 12
_BOUND_AAD_PREFIX = b"mcp-tasks-temporal/aes-256-gcm/2\x00"


class CodecError(ValueError):
    """A payload cannot be decrypted, or the codec is misconfigured."""


def key_id(key: bytes) -> str:
    """A stable public name for a key: rotation needs to know which key sealed a payload."""
    return hashlib.sha256(b"mcp-tasks-temporal/codec-key-id\x00" + key).hexdigest()[:16]


def new_key() -> str:
    """A fresh key in the format the key file and `MCP_TASKS_CODEC_KEYS` take."""
    return base64.b64encode(secrets.token_bytes(32)).decode()


def parse_keys(text: str) -> list[bytes]:
    """Keys from a key file or the variable: base64, one per line or comma-separated; `#` starts a comment."""
    keys: list[bytes] = []
    for line in text.splitlines():
        for item in line.split("#", 1)[0].split(","):
            item = item.strip()
            if not item:
                continue
            try:
                key = base64.b64decode(item.replace("-", "+").replace("_", "/") + "=" * (-len(item) % 4))
            except binascii.Error:
                raise CodecError(f"codec key #{len(keys) + 1} is not base64") from None
            if len(key) != 32:
                raise CodecError(f"codec key #{len(keys) + 1} is {len(key)} bytes; AES-256 needs 32")
            keys.append(key)
    return keys


def binding_of(context: SerializationContext | None) -> bytes | None:
    """The workflow a payload in this context belongs to, as sealed into it; `None` where no workflow is named."""
    if isinstance(context, WorkflowSerializationContext):
        return f"{context.namespace}/{context.workflow_id}".encode()
    if isinstance(context, ActivitySerializationContext) and context.workflow_id:
        return f"{context.namespace}/{context.workflow_id}".encode()
    return None


class AesGcmCodec(PayloadCodec, WithSerializationContext):
    """AES-256-GCM over each whole payload, sealed for its workflow; the first key encrypts, any listed key decrypts."""

    def __init__(self, keys: Sequence[bytes], *, allow_plaintext: bool = False) -> None:
        if not keys:
            raise CodecError("the AES-GCM codec needs at least one key")
        self._keys = {key_id(key): AESGCM(key) for key in keys}
        self._current = key_id(keys[0])
        self._allow_plaintext = allow_plaintext
        self._binding: bytes | None = None

    def with_context(self, context: SerializationContext) -> Self:
        bound = copy.copy(self)
        bound._binding = binding_of(context)
        return bound

    @property
    def encrypting_key_id(self) -> str:
        return self._current

    @property
    def key_ids(self) -> list[str]:
        """Every key's ID, the encrypting one first."""
        return [self._current, *(kid for kid in self._keys if kid != self._current)]

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decrypt(payload) for payload in payloads]

    def _encrypt(self, payload: Payload) -> Payload:
        nonce = secrets.token_bytes(_NONCE_BYTES)
        kid = self._current.encode()
        binding = self._binding or b""
        metadata = {"encoding": ENCODING, KEY_ID_METADATA: kid, FORMAT_METADATA: FORMAT_BOUND}
        if self._binding is not None:
            metadata[BINDING_METADATA] = self._binding
        sealed = self._keys[self._current].encrypt(nonce, payload.SerializeToString(), _bound_aad(kid, binding))
        return Payload(metadata=metadata, data=nonce + sealed)

    def _decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            if self._binding is not None and not self._allow_plaintext:
                # A workflow's payload in the clear where this deployment encrypts: written around the codec.
                raise CodecError(f"a payload of {self._binding.decode(errors='replace')} is not encrypted")
            return payload
        kid = payload.metadata.get(KEY_ID_METADATA, b"")
        cipher = self._keys.get(kid.decode(errors="replace"))
        if cipher is None:
            raise CodecError(f"payload encrypted with key {kid.decode(errors='replace')!r}, which is not configured")
        aad = kid  # format 1: sealed before payloads were bound to their workflow
        if payload.metadata.get(FORMAT_METADATA) == FORMAT_BOUND:
            binding = payload.metadata.get(BINDING_METADATA, b"")
            if self._binding is not None and binding and binding != self._binding:
                raise CodecError(f"a payload sealed for another workflow was read as one of {self._binding.decode()}")
            aad = _bound_aad(kid, binding)
        elif FORMAT_METADATA in payload.metadata:
            raise CodecError("payload in an encryption format this server does not know")
        nonce, sealed = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
        try:
            plain = cipher.decrypt(nonce, sealed, aad)
        except InvalidTag:
            raise CodecError(f"payload under key {kid.decode()!r} failed authentication") from None
        decoded = Payload()
        decoded.ParseFromString(plain)
        return decoded


def _bound_aad(kid: bytes, binding: bytes) -> bytes:
    return _BOUND_AAD_PREFIX + kid + b"\x00" + binding


def load_codec(
    *, spec: str | None = None, key_file: Path | None = None, environ: Mapping[str, str]
) -> PayloadCodec | None:
    """`--codec MODULE:ATTR`, else AES-GCM from a key file, else from `MCP_TASKS_CODEC_KEYS`, else none.

    `environ` holds the keys and the plaintext switch (`ops.settings.environment()` for a command).

    Raises:
        CodecError: The codec cannot be loaded or a key is malformed.
    """
    if spec and (key_file is not None or environ.get(KEYS_ENV)):
        raise CodecError(f"--codec and AES-GCM keys (--codec-key-file, ${KEYS_ENV}) exclude each other")
    if spec:
        return _import_codec(spec)
    if key_file is not None:
        try:
            text = key_file.read_text()
        except OSError as err:
            raise CodecError(f"cannot read the codec key file {key_file}: {err.strerror}") from None
        keys = parse_keys(text)
        if not keys:
            raise CodecError(f"the codec key file {key_file} holds no key")
        return AesGcmCodec(keys, allow_plaintext=_allows_plaintext(environ))
    if environ.get(KEYS_ENV):
        return AesGcmCodec(parse_keys(environ[KEYS_ENV]), allow_plaintext=_allows_plaintext(environ))
    return None


def _allows_plaintext(environ: Mapping[str, str]) -> bool:
    return environ.get(ALLOW_PLAINTEXT_ENV, "").strip().lower() in ("1", "true", "yes")


def _import_codec(spec: str) -> PayloadCodec:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CodecError(f"--codec takes MODULE:ATTR, not {spec!r}")
    try:
        target: object = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise CodecError(f"cannot load the codec {spec}: {err}") from None
    if not isinstance(target, PayloadCodec) and callable(target):
        target = target()
    if not isinstance(target, PayloadCodec):
        raise CodecError(f"{spec} is not a temporalio PayloadCodec (got {type(target).__name__})")
    return target
