"""The operator commands' connection to Temporal: the deployment's settings and codec, core logs on stderr.

`audit` and `admin` are one-shot commands whose stdout is read by programs (`--json`,
`--format json`): the SDK core's own log lines, which it prints on stdout by default,
are forwarded to Python logging here, and so go to stderr with the command's own.
"""

from __future__ import annotations

import getpass
import logging
import socket
from collections.abc import Generator
from contextlib import AsyncExitStack, contextmanager
from functools import cache

from mcp.server.request_state import compact_json
from temporalio.client import Client
from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

from mcp_tasks_temporal.ops.settings import environment
from mcp_tasks_temporal.ops.settings.processes import OperatorSettings
from mcp_tasks_temporal.temporal.connection import connect as connect_temporal_client
from mcp_tasks_temporal.temporal.payload_storage import open_storage

_storage_for_command = AsyncExitStack()
"""The payload storage client a one-shot command opens, closed when the process ends."""


_REPLAY_LOGGERS = ("temporalio.core", "temporalio.worker")
"""Where a replay that fails reports it (the core's warning, the SDK's traceback): the verdict says it once."""


@contextmanager
def replay_failures_logged_at_debug() -> Generator[None]:
    """While verifying, a failed replay is the expected outcome, not a warning; `--log-level DEBUG` still shows it."""
    if logging.getLogger().getEffectiveLevel() <= logging.DEBUG:
        yield
        return
    loggers = [logging.getLogger(name) for name in _REPLAY_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@cache
def operator_runtime() -> Runtime:
    """A Temporal runtime whose core logs (a failed replay's WARN line among them) go to Python logging: stderr."""
    logging_config = LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logging.getLogger("temporalio.core")),
    )
    return Runtime(telemetry=TelemetryConfig(logging=logging_config))


async def connect(settings: OperatorSettings, command: str) -> Client:
    """One connection for an operator command; the identity says who acted in the task's history.

    The same settings and codec as the front and the workers, so an encrypted
    history reads as plain text here and nowhere else.

    Raises:
        TemporalConnectionError: Temporal could not be reached or refused the connection.
    """
    settings.owner_keying()  # a secret too short stops the command, before it connects
    identity = f"mcp-tasks-temporal {command} {getpass.getuser()}@{socket.gethostname()}"
    # Open for the rest of this one-shot command: an audit reads stored results, a replay stored activity results.
    storage = await _storage_for_command.enter_async_context(open_storage(settings.storage()))
    return await connect_temporal_client(
        settings.connection_options(),
        codec=settings.payload_codec(),
        external_storage=storage,
        environ=environment(),
        identity=identity,
        runtime=operator_runtime(),
    )


def principal_of(name: str, jwt_issuer: str | None = None) -> str:
    """The principal string the front server derives from a bearer token, for a name or a JSON triple.

    The server binds tasks to `["client_id", issuer, "subject"]` of the token: the static
    token verifier reports the file's name as client and subject with no issuer; the JWT
    verifier the principal claim as both, with the token's issuer (the front's
    `--jwt-issuer`, which `jwt_issuer` names here). Other verifiers: pass the triple.
    """
    if name.startswith("["):
        return name
    return compact_json((name, jwt_issuer or None, name))
