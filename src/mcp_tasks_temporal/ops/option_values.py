"""What a parsed command line asks of Temporal: the connection, the payload codec, the payload storage.

The flags are declared in `cli_options` and `payload_options` (light, for a fast `--help`);
this module imports the Temporal side that reads them, which takes plain values only.
"""

from __future__ import annotations

import argparse
import dataclasses

from temporalio.converter import PayloadCodec

from mcp_tasks_temporal.ops.settings import environment
from mcp_tasks_temporal.temporal.codec import load_codec
from mcp_tasks_temporal.temporal.connection import ConnectionOptions
from mcp_tasks_temporal.temporal.payload_options import BUCKET_ENV, DIR_ENV
from mcp_tasks_temporal.temporal.payload_storage import PayloadStorageError, StorageSettings


def connection_options_from_args(args: argparse.Namespace) -> ConnectionOptions:
    """The connection flags given; the unset ones stay `None`, for the environment's profile to fill."""
    values = vars(args)
    return ConnectionOptions(**{field.name: values.get(field.name) for field in dataclasses.fields(ConnectionOptions)})


def codec_from_args(args: argparse.Namespace) -> PayloadCodec | None:
    """The codec the command line and environment ask for, if any.

    Raises:
        CodecError: The codec cannot be loaded or a key is malformed.
    """
    return load_codec(spec=args.codec, key_file=args.codec_key_file, environ=environment())


def storage_from_args(args: argparse.Namespace) -> StorageSettings:
    """The settings the command line and environment ask for (`none` where the command has no such options).

    Raises:
        PayloadStorageError: The chosen driver misses its directory or bucket.
    """
    kind = getattr(args, "payload_storage", None) or "none"
    if kind == "none":
        return StorageSettings()
    settings = StorageSettings(
        kind=kind,
        directory=args.payload_dir,
        bucket=args.payload_bucket,
        endpoint_url=args.payload_endpoint_url,
        threshold=args.payload_threshold,
        max_bytes=args.payload_max_bytes,
    )
    if kind == "local" and settings.directory is None:
        raise PayloadStorageError(f"--payload-storage local needs --payload-dir (${DIR_ENV})")
    if kind in ("s3", "gcs") and not settings.bucket:
        raise PayloadStorageError(f"--payload-storage {kind} needs --payload-bucket (${BUCKET_ENV})")
    return settings
