"""The payload storage settings' names and defaults, importable without Temporal (`--help` stays fast).

`ops.payload_options` makes flags of them, `payload_storage` reads what they set.
"""

from __future__ import annotations

from typing import Final

STORAGE_ENV: Final = "MCP_TASKS_PAYLOAD_STORAGE"
DIR_ENV: Final = "MCP_TASKS_PAYLOAD_DIR"
BUCKET_ENV: Final = "MCP_TASKS_PAYLOAD_BUCKET"
ENDPOINT_ENV: Final = "MCP_TASKS_PAYLOAD_ENDPOINT_URL"
THRESHOLD_ENV: Final = "MCP_TASKS_PAYLOAD_THRESHOLD"
MAX_ENV: Final = "MCP_TASKS_PAYLOAD_MAX_BYTES"

KINDS: Final = ("none", "local", "s3", "gcs")
STORAGE_SETTING: Final = f"--payload-storage (${STORAGE_ENV}) local, s3 or gcs"
"""What an over-limit error tells the operator to turn on."""
MAX_SETTING: Final = f"--payload-max-bytes (${MAX_ENV})"

DEFAULT_THRESHOLD: Final = 256 * 1024
DEFAULT_MAX_BYTES: Final = 128 * 1024 * 1024
