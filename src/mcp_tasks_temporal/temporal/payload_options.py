"""The payload storage options and their defaults, importable without Temporal (`--help` stays fast).

`payload_storage` reads what they set.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
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
        default=os.environ.get(STORAGE_ENV) or default_kind,
        help=f"where large payloads go (${STORAGE_ENV}, default {default_kind}); without storage a payload "
        "over Temporal's limit (2 MiB) fails its task with an error saying so",
    )
    group.add_argument(
        "--payload-dir",
        type=Path,
        default=os.environ.get(DIR_ENV) or None,
        metavar="DIR",
        help=f"directory of the local driver (${DIR_ENV}; dev: STATE_DIR/payloads)",
    )
    group.add_argument(
        "--payload-bucket",
        default=os.environ.get(BUCKET_ENV) or None,
        metavar="NAME",
        help=f"bucket of the s3 or gcs driver, which must exist (${BUCKET_ENV}); credentials and region come "
        "from the provider's usual environment (AWS_*, GOOGLE_APPLICATION_CREDENTIALS)",
    )
    group.add_argument(
        "--payload-endpoint-url",
        default=os.environ.get(ENDPOINT_ENV) or None,
        metavar="URL",
        help=f"an S3-compatible endpoint instead of AWS's (${ENDPOINT_ENV}), e.g. MinIO",
    )
    group.add_argument(
        "--payload-threshold",
        type=_size,
        default=_size(os.environ.get(THRESHOLD_ENV) or str(DEFAULT_THRESHOLD)),
        metavar="BYTES",
        help=f"payloads this large or larger are stored (${THRESHOLD_ENV}, default {DEFAULT_THRESHOLD})",
    )
    group.add_argument(
        "--payload-max-bytes",
        type=_size,
        default=_size(os.environ.get(MAX_ENV) or str(DEFAULT_MAX_BYTES)),
        metavar="BYTES",
        help=f"largest payload stored; a larger result fails its task (${MAX_ENV}, default {DEFAULT_MAX_BYTES})",
    )
