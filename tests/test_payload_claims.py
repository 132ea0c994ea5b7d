"""The local payload driver takes back only the claims it makes: a 64-character lowercase hex SHA-256.

A claim comes from a history, which anyone who can write to the namespace can fill: the driver must never
turn one into a path before it knows it is a digest (`../`, another case, another length), so it refuses
such a claim as not its own, before any file is opened, where a claim it made and cannot find is a
`StoredPayloadError`. Pure logic on a temporary directory: no Temporal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import StorageDriverClaim, StorageDriverRetrieveContext, StorageDriverStoreContext

from mcp_tasks_temporal.temporal.payload_storage import LocalStorageDriver, StoredPayloadError

pytestmark = pytest.mark.anyio

NOT_DIGESTS: dict[str, Callable[[str], str]] = {
    "upper case": str.upper,
    "one character short": lambda digest: digest[:-1],
    "one character long": lambda digest: digest + "0",
    "a path out of the directory": lambda digest: "../../" + digest[6:],
    "a path inside it": lambda digest: digest[:2] + "/" + digest[3:],
    "not hex": lambda digest: "g" + digest[1:],
    "empty": lambda digest: "",
}


@pytest.mark.parametrize("mangle", NOT_DIGESTS.values(), ids=NOT_DIGESTS.keys())
async def test_a_claim_that_is_not_a_lowercase_sha256_is_refused_before_any_file_is_read(
    tmp_path: Path, mangle: Callable[[str], str]
) -> None:
    driver = LocalStorageDriver(tmp_path / "payloads")
    stored = Payload(data=b"the tool's result")
    [claim] = await driver.store(StorageDriverStoreContext(), [stored])
    assert await driver.retrieve(StorageDriverRetrieveContext(), [claim]) == [stored]
    # Whatever the mangled claim names, a file is there: only a refusal of the claim itself keeps it unread.
    forged = mangle(claim.claim_data["sha256"])
    target = tmp_path / "payloads" / "sha256" / forged[:2] / forged
    if forged and target.resolve().is_relative_to(tmp_path):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(stored.SerializeToString())
    with pytest.raises(ValueError) as refused:
        await driver.retrieve(StorageDriverRetrieveContext(), [StorageDriverClaim(claim_data={"sha256": forged})])
    assert not isinstance(refused.value, StoredPayloadError), f"the claim was looked up: {refused.value}"
