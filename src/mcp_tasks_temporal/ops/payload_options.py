"""The payload storage flags, importable without Temporal (`--help` stays fast).

Their defaults come from the `MCP_TASKS_PAYLOAD_*` variables `temporal.payload_options`
names; `ops.option_values.storage_from_args` turns what they set into `StorageSettings`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mcp_tasks_temporal.ops.settings import variable
from mcp_tasks_temporal.temporal.payload_options import (
    BUCKET_ENV,
    DEFAULT_MAX_BYTES,
    DEFAULT_THRESHOLD,
    DIR_ENV,
    ENDPOINT_ENV,
    KINDS,
    MAX_ENV,
    STORAGE_ENV,
    THRESHOLD_ENV,
)


def _size(value: str) -> int:
    size = int(value)
    if size < 0:
        raise argparse.ArgumentTypeError("a size is a number of bytes, 0 or more")
    return size


def add_storage_options(parser: argparse.ArgumentParser, *, default_kind: str = "none") -> None:
    group = parser.add_argument_group(
        "Large payloads",
        "Payloads over the threshold (results, arguments, answers) are stored outside Temporal and the history "
        "keeps a reference. Every front server and worker of a deployment needs the same settings.",
    )
    group.add_argument(
        "--payload-storage",
        choices=KINDS,
        default=variable(STORAGE_ENV) or default_kind,
        help=f"where large payloads go (${STORAGE_ENV}, default {default_kind}); without storage a payload "
        "over Temporal's limit (2 MiB) fails its task with an error saying so",
    )
    group.add_argument(
        "--payload-dir",
        type=Path,
        default=variable(DIR_ENV),
        metavar="DIR",
        help=f"directory of the local driver (${DIR_ENV}; dev: STATE_DIR/payloads)",
    )
    group.add_argument(
        "--payload-bucket",
        default=variable(BUCKET_ENV),
        metavar="NAME",
        help=f"bucket of the s3 or gcs driver, which must exist (${BUCKET_ENV}); credentials and region come "
        "from the provider's usual environment (AWS_*, GOOGLE_APPLICATION_CREDENTIALS)",
    )
    group.add_argument(
        "--payload-endpoint-url",
        default=variable(ENDPOINT_ENV),
        metavar="URL",
        help=f"an S3-compatible endpoint instead of AWS's (${ENDPOINT_ENV}), e.g. MinIO",
    )
    group.add_argument(
        "--payload-threshold",
        type=_size,
        default=_size(variable(THRESHOLD_ENV) or str(DEFAULT_THRESHOLD)),
        metavar="BYTES",
        help=f"payloads this large or larger are stored (${THRESHOLD_ENV}, default {DEFAULT_THRESHOLD})",
    )
    group.add_argument(
        "--payload-max-bytes",
        type=_size,
        default=_size(variable(MAX_ENV) or str(DEFAULT_MAX_BYTES)),
        metavar="BYTES",
        help=f"largest payload stored; a larger result fails its task (${MAX_ENV}, default {DEFAULT_MAX_BYTES})",
    )
