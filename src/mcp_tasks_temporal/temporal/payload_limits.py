"""How large one payload may be, and the error that says so before Temporal refuses it.

Temporal refuses a payload over the namespace's blob size limit (2 MiB by
default): a result over it was computed, thrown away and retried until the retry
budget ran out, and the task failed with no word of why. Measured before it is
handed to Temporal, an over-limit value fails at once with an error that names
its size, the limit and the setting that lifts it. With external storage the
limit is the storage's `--payload-max-bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from mcp.shared.exceptions import MCPError
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.converter import PayloadConverter
from temporalio.service import RPCError

from mcp_tasks_temporal.temporal.contract import INVALID_PARAMS_CODE, PAYLOAD_TOO_LARGE_CODE
from mcp_tasks_temporal.temporal.payload_storage import MAX_SETTING, STORAGE_SETTING, StorageSettings

DEFAULT_BLOB_LIMIT: Final = 2 * 1024 * 1024
"""Temporal's `limit.blobSize.error` default; a namespace may say otherwise."""
ENVELOPE_MARGIN: Final = 16 * 1024
"""Room for what travels with the value in the same field: a codec's nonce and tag, the task's other inputs."""


@dataclass(frozen=True)
class PayloadLimits:
    """The largest value one payload may carry in this deployment."""

    blob_limit: int = DEFAULT_BLOB_LIMIT
    storage: StorageSettings | None = None

    @property
    def stored(self) -> bool:
        return self.storage is not None and self.storage.enabled

    @property
    def limit(self) -> int:
        if self.storage is not None and self.storage.enabled:
            return self.storage.max_bytes - ENVELOPE_MARGIN
        return self.blob_limit - ENVELOPE_MARGIN

    def check(self, converter: PayloadConverter, value: Any, what: str, *, code: int) -> None:
        """Raise the explaining error when `value` is too large for one payload.

        Raises:
            MCPError: `code`, with `data` naming the size, the limit and the setting.
        """
        size = encoded_size(converter, value)
        if size <= self.limit:
            return
        setting = MAX_SETTING if self.stored else STORAGE_SETTING
        if self.stored:
            message = f"{what} is {size} bytes, over the {self.limit} bytes payload storage takes; raise {setting}"
        else:
            message = (
                f"{what} is {size} bytes, over Temporal's payload limit ({self.limit} bytes); "
                f"store large payloads with {setting}"
            )
        raise MCPError(code=code, message=message, data={"size": size, "limit": self.limit, "setting": setting})

    def check_result(self, converter: PayloadConverter, value: Any) -> None:
        self.check(converter, value, "The tool's result", code=PAYLOAD_TOO_LARGE_CODE)

    def check_input(self, converter: PayloadConverter, value: Any, what: str) -> None:
        self.check(converter, value, what, code=INVALID_PARAMS_CODE)


def encoded_size(converter: PayloadConverter, value: Any) -> int:
    """Bytes `value` takes as a payload, before any codec."""
    payloads = converter.to_payloads([value])
    return sum(payload.ByteSize() for payload in payloads)


async def namespace_blob_limit(client: Client) -> int:
    """The namespace's blob size limit as the server reports it, else Temporal's default."""
    try:
        described = await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace)
        )
    except RPCError:
        return DEFAULT_BLOB_LIMIT
    return described.namespace_info.limits.blob_size_limit_error or DEFAULT_BLOB_LIMIT
