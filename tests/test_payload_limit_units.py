"""The payload limit's boundary: a value of exactly the limit goes through, one byte more is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from temporalio.contrib.pydantic import pydantic_data_converter

from mcp_tasks_temporal.temporal.contract import INVALID_PARAMS_CODE, PAYLOAD_TOO_LARGE_CODE
from mcp_tasks_temporal.temporal.payload_limits import ENVELOPE_MARGIN, PayloadLimits, encoded_size
from mcp_tasks_temporal.temporal.payload_storage import StorageSettings

CONVERTER = pydantic_data_converter.payload_converter


def _exactly(limit: int) -> str:
    """A string whose payload is exactly `limit` bytes."""
    text = "x" * limit
    while encoded_size(CONVERTER, text) > limit:
        text = text[: len(text) - (encoded_size(CONVERTER, text) - limit)]
    assert encoded_size(CONVERTER, text) == limit
    return text


def test_a_value_of_exactly_the_limit_is_taken_and_one_byte_more_is_refused() -> None:
    limits = PayloadLimits(blob_limit=64 * 1024)
    at_limit = _exactly(limits.limit)
    limits.check_result(CONVERTER, at_limit)
    limits.check_input(CONVERTER, at_limit, "The arguments")
    with pytest.raises(MCPError) as refused:
        limits.check_result(CONVERTER, at_limit + "x")
    assert refused.value.error.code == PAYLOAD_TOO_LARGE_CODE
    data = refused.value.error.data
    assert data == {"size": limits.limit + 1, "limit": limits.limit, "setting": data["setting"]}
    with pytest.raises(MCPError) as refused:
        limits.check_input(CONVERTER, at_limit + "x", "The arguments")
    assert refused.value.error.code == INVALID_PARAMS_CODE


def test_with_payload_storage_the_boundary_is_the_storages_maximum(tmp_path: Path) -> None:
    limits = PayloadLimits(storage=StorageSettings(kind="local", directory=tmp_path, max_bytes=96 * 1024))
    assert limits.stored and limits.limit == 96 * 1024 - ENVELOPE_MARGIN
    at_limit = _exactly(limits.limit)
    limits.check_result(CONVERTER, at_limit)
    with pytest.raises(MCPError) as refused:
        limits.check_result(CONVERTER, at_limit + "x")
    assert refused.value.error.code == PAYLOAD_TOO_LARGE_CODE
