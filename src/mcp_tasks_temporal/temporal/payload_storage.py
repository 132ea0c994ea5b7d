"""Large payloads: results, arguments and answers over Temporal's payload limit live outside the history.

temporalio's external storage swaps each payload of at least `--payload-threshold`
bytes (after the codec, so stored blobs are ciphertext when a codec is on) for a
small reference, and fetches it back wherever the payload is decoded. The history
then holds only the reference. Drivers:

- `local`: files in a directory (`dev` uses `<state dir>/payloads`), for one machine.
- `s3`: an S3 bucket (or any S3-compatible store, `--payload-endpoint-url`), through aioboto3.
- `gcs`: a Google Cloud Storage bucket, through gcloud-aio-storage.

Every process of a deployment (front servers, workers, `admin`/`audit` reading
results) needs the same storage: a payload stored by one is read by another.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import tempfile
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

import anyio
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from mcp_tasks_temporal.temporal.payload_options import (
    DEFAULT_MAX_BYTES,
    DEFAULT_THRESHOLD,
    KINDS,
    MAX_SETTING,
    STORAGE_SETTING,
)

__all__ = ["KINDS", "MAX_SETTING", "STORAGE_SETTING"]

logger = logging.getLogger("mcp_tasks_temporal")


class PayloadStorageError(ValueError):
    """The storage settings are incomplete or its driver's package is missing."""


class StoredPayloadError(ValueError):
    """A stored payload is gone or is not the one its reference names: never handed on as if it were.

    The message names the payload by its digest only: where the storage lives is the operator's business.
    """


@dataclass(frozen=True)
class StorageSettings:
    """Where payloads over the threshold go."""

    kind: str = "none"
    directory: Path | None = None
    bucket: str | None = None
    endpoint_url: str | None = None
    threshold: int = DEFAULT_THRESHOLD
    max_bytes: int = DEFAULT_MAX_BYTES

    @property
    def enabled(self) -> bool:
        return self.kind != "none"

    def worker_args(self) -> list[str]:
        """The same settings as flags, for a process started with them (dev's worker)."""
        if not self.enabled:
            return ["--payload-storage", "none"]
        args = ["--payload-storage", self.kind, "--payload-threshold", str(self.threshold)]
        args += ["--payload-max-bytes", str(self.max_bytes)]
        if self.directory is not None:
            args += ["--payload-dir", str(self.directory.resolve())]
        if self.bucket is not None:
            args += ["--payload-bucket", self.bucket]
        if self.endpoint_url is not None:
            args += ["--payload-endpoint-url", self.endpoint_url]
        return args


@asynccontextmanager
async def open_storage(settings: StorageSettings) -> AsyncGenerator[ExternalStorage | None]:
    """The `ExternalStorage` for `settings`, its cloud client open while the context lasts; None without storage.

    Raises:
        PayloadStorageError: The driver's package is not installed.
    """
    if not settings.enabled:
        yield None
        return
    async with AsyncExitStack() as stack:
        driver: StorageDriver
        if settings.kind == "local":
            assert settings.directory is not None
            driver = LocalStorageDriver(settings.directory, max_payload_size=settings.max_bytes)
        elif settings.kind == "s3":
            driver = await _s3_driver(stack, settings)
        else:
            driver = await _gcs_driver(stack, settings)
        yield ExternalStorage(
            drivers=[ReadFailuresNamed(driver, settings=settings)], payload_size_threshold=settings.threshold
        )


async def _s3_driver(stack: AsyncExitStack, settings: StorageSettings) -> StorageDriver:
    try:
        import aioboto3  # pyright: ignore[reportMissingTypeStubs]
        from temporalio.contrib.aws.s3driver import S3StorageDriver
        from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
    except ImportError:
        raise PayloadStorageError('--payload-storage s3 needs: pip install "mcp-tasks-temporal[s3]"') from None
    session: Any = aioboto3.Session()
    s3: Any = await stack.enter_async_context(session.client("s3", endpoint_url=settings.endpoint_url))
    assert settings.bucket is not None
    return S3StorageDriver(client=new_aioboto3_client(s3), bucket=settings.bucket, max_payload_size=settings.max_bytes)


async def _gcs_driver(stack: AsyncExitStack, settings: StorageSettings) -> StorageDriver:
    from temporalio.contrib.gcp.gcsdriver import GCSStorageDriver

    try:
        # Imported by name: the optional package ships no type information.
        gcloud_storage: Any = import_module("gcloud.aio.storage")
        adapter: Any = import_module("temporalio.contrib.gcp.gcsdriver.gcloud_aio")
    except ImportError:
        raise PayloadStorageError('--payload-storage gcs needs: pip install "mcp-tasks-temporal[gcs]"') from None
    storage: Any = (
        gcloud_storage.Storage(api_root=settings.endpoint_url) if settings.endpoint_url else gcloud_storage.Storage()
    )
    stack.push_async_callback(storage.close)
    assert settings.bucket is not None
    return GCSStorageDriver(
        client=adapter.new_gcloud_aio_client(storage), bucket=settings.bucket, max_payload_size=settings.max_bytes
    )


class ReadFailuresNamed(StorageDriver):
    """A driver whose failed reads are a `StoredPayloadError`: the caller learns that, not the bucket or key.

    temporalio's S3 and GCS drivers check each object against its digest too, and name the bucket and key
    when that or the read fails; those details go to the log, where operators look, not to a client.
    """

    def __init__(self, driver: StorageDriver, *, settings: StorageSettings | None = None) -> None:
        self._driver = driver
        self.settings = settings
        """What it was opened with: a worker compares it with the other processes' (`shared_settings`)."""

    def name(self) -> str:
        return self._driver.name()

    def type(self) -> str:
        return self._driver.type()

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        return await self._driver.store(context, payloads)

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        try:
            return await self._driver.retrieve(context, claims)
        except StoredPayloadError:
            raise
        except Exception as err:
            logger.error("reading a stored payload through %s failed: %s", self._driver.name(), err)
            raise StoredPayloadError(f"a payload stored through {self._driver.name()} cannot be read") from err


class LocalStorageDriver(StorageDriver):
    """Payloads as files under one directory, named by their SHA-256: a stored payload is stored once.

    Every read checks the file against the digest it is named by, so a file copied over another (one task's
    result over another's) is refused, not served. For one machine (`dev`): every process reading the
    payloads must see the directory.
    """

    def __init__(self, directory: Path, *, max_payload_size: int = DEFAULT_MAX_BYTES) -> None:
        self._directory = directory
        self._max_payload_size = max_payload_size

    def name(self) -> str:
        return "mcp-tasks-temporal.local"

    def type(self) -> str:
        return "mcp-tasks-temporal.local"

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        return [await anyio.to_thread.run_sync(self._store_one, payload) for payload in payloads]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return [await anyio.to_thread.run_sync(self._retrieve_one, claim.claim_data) for claim in claims]

    def _store_one(self, payload: Payload) -> StorageDriverClaim:
        data = payload.SerializeToString()
        if len(data) > self._max_payload_size:
            raise ValueError(f"payload of {len(data)} bytes is over {MAX_SETTING} {self._max_payload_size}")
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: a reader never sees half a payload, and two writers of one digest agree.
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as part:
                part.write(data)
            Path(part.name).replace(path)
        return StorageDriverClaim(claim_data={"sha256": digest})

    def _retrieve_one(self, claim: Mapping[str, str]) -> Payload:
        digest = claim.get("sha256", "")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError("not a claim of the local payload driver")
        path = self._path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise StoredPayloadError(f"stored payload sha256:{digest} is missing") from None
        if not hmac.compare_digest(hashlib.sha256(data).hexdigest(), digest):
            raise StoredPayloadError(f"stored payload sha256:{digest} does not match its digest")
        payload = Payload()
        payload.ParseFromString(data)
        return payload

    def _path(self, digest: str) -> Path:
        return self._directory / "sha256" / digest[:2] / digest
