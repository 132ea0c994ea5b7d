"""Command-line options shared by several commands, importable without Temporal or MCP (`--help` stays fast).

`codec` and `connection` read what they set.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mcp_tasks_temporal.ops.settings import variable
from mcp_tasks_temporal.temporal.contract import CODEC_KEYS_ENV, DEFAULT_ADDRESS, DEFAULT_NAMESPACE

KEYS_ENV = CODEC_KEYS_ENV
KEY_FILE_ENV = "MCP_TASKS_CODEC_KEY_FILE"
CODEC_ENV = "MCP_TASKS_CODEC"
DEFAULT_UI_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
"""Where a local Temporal Web UI calls the codec server from."""


def add_codec_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "Payload encryption",
        f"AES-256-GCM with the keys in --codec-key-file or ${KEYS_ENV} (base64, 32 bytes each; the first "
        "encrypts, all decrypt), or any PayloadCodec with --codec. Every process of a deployment needs the same.",
    )
    group.add_argument(
        "--codec-key-file",
        type=Path,
        default=variable(KEY_FILE_ENV),
        metavar="FILE",
        help=f"AES-256-GCM keys, one per line, newest first (${KEY_FILE_ENV})",
    )
    group.add_argument(
        "--codec",
        default=variable(CODEC_ENV),
        metavar="MODULE:ATTR",
        help=f"a PayloadCodec instance, or a callable returning one (${CODEC_ENV})",
    )


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """The `temporal` CLI's connection flags; each defaults to its `TEMPORAL_*` variable or profile."""
    group = parser.add_argument_group(
        "Temporal connection",
        "Unset flags come from the TEMPORAL_* environment variables and the temporal.toml profile, "
        "as for the temporal CLI.",
    )
    group.add_argument(
        "--address",
        "--temporal",
        dest="address",
        metavar="HOST:PORT",
        help=f"Temporal frontend ($TEMPORAL_ADDRESS, default {DEFAULT_ADDRESS})",
    )
    group.add_argument("--namespace", help=f"($TEMPORAL_NAMESPACE, default {DEFAULT_NAMESPACE!r})")
    group.add_argument(
        "--api-key", help="Temporal Cloud API key; prefer $TEMPORAL_API_KEY, which `ps` does not show (implies TLS)"
    )
    group.add_argument(
        "--tls", action=argparse.BooleanOptionalAction, default=None, help="TLS with the system CAs ($TEMPORAL_TLS)"
    )
    group.add_argument(
        "--tls-ca-path", type=Path, metavar="PEM", help="CA that signed the server ($TEMPORAL_TLS_SERVER_CA_CERT_PATH)"
    )
    group.add_argument(
        "--tls-cert-path", type=Path, metavar="PEM", help="client certificate, mTLS ($TEMPORAL_TLS_CLIENT_CERT_PATH)"
    )
    group.add_argument(
        "--tls-key-path", type=Path, metavar="PEM", help="client private key, mTLS ($TEMPORAL_TLS_CLIENT_KEY_PATH)"
    )
    group.add_argument("--tls-server-name", help="name expected in the server certificate ($TEMPORAL_TLS_SERVER_NAME)")
    group.add_argument("--profile", help="profile of the config file ($TEMPORAL_PROFILE, default 'default')")
    group.add_argument(
        "--config-file", type=Path, metavar="TOML", help="($TEMPORAL_CONFIG_FILE, default the temporal CLI's)"
    )
