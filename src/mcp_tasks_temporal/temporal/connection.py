"""The one way this project connects to Temporal: the `temporal` CLI's own configuration, with flags on top.

The settings come from `temporalio.envconfig`, so a worker or front server finds the
cluster the same way `temporal workflow list` does: the `TEMPORAL_ADDRESS`,
`TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*` and `TEMPORAL_GRPC_META_*`
variables over the `TEMPORAL_PROFILE` profile of `temporal.toml` (`TEMPORAL_CONFIG_FILE`,
else the CLI's default location). Flags named as the CLI names them override both.

Every client the project makes (front server, worker, `dev`, tests, benchmarks)
uses temporalio's pydantic data converter, so pydantic models work as workflow
inputs and results, and a value written by one process reads back the same in
every other; its JSON encoding of plain values and dataclasses is the default
converter's, so histories written before still decode. A payload codec, when
configured, sits on top of it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client, Interceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    ExternalStorage,
    PayloadCodec,
)
from temporalio.envconfig import ClientConfigProfile, ClientConfigTLS
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.temporal.contract import DEFAULT_ADDRESS, DEFAULT_NAMESPACE

logger = logging.getLogger(__name__)


class TemporalConnectionError(RuntimeError):
    """Temporal could not be reached or refused us; the message is one line for an operator."""


@dataclass(frozen=True)
class ConnectionOptions:
    """What the command line says about the connection; `None` leaves the setting to the environment."""

    address: str | None = None
    namespace: str | None = None
    api_key: str | None = None
    tls: bool | None = None
    tls_ca_path: Path | None = None
    tls_cert_path: Path | None = None
    tls_key_path: Path | None = None
    tls_server_name: str | None = None
    profile: str | None = None
    config_file: Path | None = None


def connect_config(
    options: ConnectionOptions, environ: Mapping[str, str] | None = None, *, use_environment: bool = True
) -> dict[str, Any]:
    """Keyword arguments for `Client.connect`: the environment's profile with `options` on top.

    `environ` holds the `TEMPORAL_*` variables (`ops.settings.environment()` for a command; none when
    not given). `use_environment=False` ignores variables and config files, for a server this process
    started itself.

    Raises:
        TemporalConnectionError: The profile or a certificate file cannot be read.
    """
    profile = ClientConfigProfile()
    if use_environment:
        # An empty variable is an unset one (compose files and manifests often set `TEMPORAL_API_KEY: ""`);
        # taken literally, an empty API key would switch TLS on and an empty CA path would read ".".
        variables = {name: value for name, value in (environ or {}).items() if value}
        try:
            profile = ClientConfigProfile.load(
                profile=options.profile, config_source=options.config_file, override_env_vars=variables
            )
        except Exception as err:  # the bridge's ConfigError is not importable as a public type
            raise TemporalConnectionError(f"Temporal client configuration: {_one_line(err)}") from None
    tls = profile.tls or ClientConfigTLS()
    tls_flags = {
        "server_root_ca_cert": options.tls_ca_path,
        "client_cert": options.tls_cert_path,
        "client_private_key": options.tls_key_path,
        "server_name": options.tls_server_name,
    }
    tls = dataclasses.replace(tls, **{name: value for name, value in tls_flags.items() if value is not None})
    if options.tls is not None:
        tls = dataclasses.replace(tls, disabled=not options.tls)
    elif any(value is not None for value in tls_flags.values()):
        tls = dataclasses.replace(tls, disabled=False)
    profile = dataclasses.replace(
        profile,
        address=options.address or profile.address or DEFAULT_ADDRESS,
        namespace=options.namespace or profile.namespace or DEFAULT_NAMESPACE,
        api_key=options.api_key if options.api_key is not None else profile.api_key,
        tls=tls if tls != ClientConfigTLS() else None,
    )
    try:
        return dict(profile.to_client_connect_config())
    except OSError as err:
        raise TemporalConnectionError(
            f"cannot read a TLS file: {err.strerror or err} ({err.filename})"  # pyright: ignore[reportUnknownMemberType]
        ) from None


def data_converter(codec: PayloadCodec | None = None, external_storage: ExternalStorage | None = None) -> DataConverter:
    """The converter every client of the project uses: pydantic-aware JSON, then the codec if any,
    then external storage for payloads over its threshold (`payload_storage`).

    With a codec, failure messages and stack traces travel as encoded attributes too:
    an exception's text may quote the arguments the codec keeps out of the history.
    """
    converter = pydantic_data_converter
    if codec is not None:
        converter = dataclasses.replace(
            converter,
            payload_codec=codec,
            failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
        )
    if external_storage is not None:
        converter = dataclasses.replace(converter, external_storage=external_storage)
    return converter


async def connect(
    options: ConnectionOptions,
    *,
    codec: PayloadCodec | None = None,
    external_storage: ExternalStorage | None = None,
    interceptors: Sequence[Interceptor] = (),
    runtime: Runtime | None = None,
    plugins: Sequence[Any] = (),
    environ: Mapping[str, str] | None = None,
    use_environment: bool = True,
    require_namespace: bool = True,
    identity: str | None = None,
) -> Client:
    """Connect and look the namespace up, so a misconfiguration fails at start-up, on one line.

    `require_namespace=False` only warns about a missing namespace: a front server
    may start before its namespace is created, and its `/readyz` says so meanwhile.

    Raises:
        TemporalConnectionError: Temporal is unreachable, the TLS handshake or the
            credentials were refused, or the namespace does not exist (when required).
    """
    config = connect_config(options, environ, use_environment=use_environment)
    if identity is not None:
        config["identity"] = identity
    address, namespace = config["target_host"], config["namespace"]
    where = f"Temporal at {address} (namespace {namespace})"
    try:
        client = await Client.connect(
            **config,
            data_converter=data_converter(codec, external_storage),
            interceptors=interceptors,
            runtime=runtime,
            plugins=list(plugins),
        )
    except RPCError as err:
        raise _refused(where, err) from None
    except RuntimeError as err:
        raise TemporalConnectionError(f"cannot connect to {where}: {_explain(_one_line(err))}") from None
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND or require_namespace:
            raise _refused(where, err) from None
        logger.warning("%s: the namespace does not exist (yet)", where)
    return client


def _refused(where: str, err: RPCError) -> TemporalConnectionError:
    if err.status == RPCStatusCode.NOT_FOUND:
        return TemporalConnectionError(f"{where}: the namespace does not exist")
    status = err.status.name.lower().replace("_", " ") if err.status else "error"
    return TemporalConnectionError(f"{where} refused the connection: {status}: {_one_line(err)}")


# The Rust core reports transport failures as debug dumps; the operator needs the cause and the fix.
_CAUSES = (
    ("ConnectionRefused", "connection refused; is Temporal listening there?"),
    ("dns error", "the host name does not resolve"),
    ("UnknownIssuer", "the server's certificate is not signed by a trusted CA; give its CA with --tls-ca-path"),
    ("NotValidForName", "the server's certificate does not name this host; set --tls-server-name"),
    ("Expired", "the server's certificate has expired"),
    ("InvalidCertificate", "the server's certificate was refused"),
    ("CertificateRequired", "the server requires a client certificate: give one with --tls-cert-path/--tls-key-path"),
    ("BadCertificate", "the server refused the client certificate"),
    ("close_notify", "the server closed the connection in the TLS handshake: a client certificate it accepts?"),
    ("UnexpectedEof", "the server closed the connection in the TLS handshake: a client certificate it accepts?"),
    ("ConnectionReset", "the server reset the connection in the TLS handshake: a client certificate it accepts?"),
    ("BrokenPipe", "the server dropped the connection: does it want TLS (--tls) or a client certificate?"),
    # A server that refuses the handshake may simply close; the client then only sees the close.
    ("connection closed", "the server closed the connection: does it want a client certificate or TLS (--tls)?"),
    ("InvalidContentType", "the server does not speak TLS on this port: try --no-tls"),
    ("CorruptMessage", "the server does not speak TLS on this port: try --no-tls"),
    ("deadline has elapsed", "no answer in time"),
    ("timed out", "no answer in time"),
)


def _explain(detail: str) -> str:
    for needle, cause in _CAUSES:
        if needle in detail:
            return f"{cause} ({_shorten(detail)})"
    return _shorten(detail)


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(err: BaseException) -> str:
    """The most specific part of a (often multi-line, nested) error message from the Rust core."""
    text = " ".join(str(err).split())
    for prefix in ("Failed client connect:", "Server connection error:"):
        text = text.removeprefix(prefix).strip()
    return text or type(err).__name__


async def connect_temporal(
    address: str,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    codec: PayloadCodec | None = None,
    external_storage: ExternalStorage | None = None,
    interceptors: Sequence[Interceptor] = (),
    runtime: Runtime | None = None,
    plugins: Sequence[Any] = (),
) -> Client:
    """A client for a server at a known address (one this process started, a test's): no environment, no checks.

    `plugins` are the app's (`TasksExtension.plugins`); a worker built on this client applies them too.
    """
    return await Client.connect(
        address,
        namespace=namespace,
        data_converter=data_converter(codec, external_storage),
        interceptors=interceptors,
        runtime=runtime,
        plugins=list(plugins),
    )
