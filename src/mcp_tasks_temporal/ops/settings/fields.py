"""The groups of settings the processes share; each process's model (`processes`) is a union of some of them.

Each group is one section of `--help`. Nothing here imports Temporal or the MCP SDK:
`--help` of a command builds its options from these classes. The methods that turn a
group into what the library takes import the library when they are called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr
from pydantic_settings import NoDecode

from mcp_tasks_temporal.front.settings import DEFAULT_PUSH_GIVE_UP_S
from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute
from mcp_tasks_temporal.ops.settings.model import Env, Flag, Settings
from mcp_tasks_temporal.temporal.contract import CODEC_KEYS_ENV, DEFAULT_ADDRESS, DEFAULT_NAMESPACE
from mcp_tasks_temporal.temporal.fairness_options import MAX_WEIGHT, MIN_WEIGHT, parse_weight
from mcp_tasks_temporal.temporal.payload_options import DEFAULT_MAX_BYTES, DEFAULT_THRESHOLD

if TYPE_CHECKING:
    from temporalio.converter import PayloadCodec

    from mcp_tasks_temporal.temporal.connection import ConnectionOptions
    from mcp_tasks_temporal.temporal.ids import OwnerKeying
    from mcp_tasks_temporal.temporal.payload_storage import StorageSettings

DEFAULT_UI_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
"""Where a local Temporal Web UI calls the codec server from."""
DEMO_APP = "mcp_tasks_temporal.demo:app"
"""The app `dev` serves without --app."""


def _comma_separated(value: Any) -> Any:
    """A repeatable flag's variable: a comma-separated list (`MCP_TASKS_JWT_SCOPES=read,write`)."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def _each(check: Callable[[str], object]) -> Callable[[list[str]], list[str]]:
    def validate(items: list[str]) -> list[str]:
        for item in items:
            check(item)
        return items

    return validate


def _ttl(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("none", "null", "unlimited"):
        return None
    return value


def _positive(value: int | None) -> int | None:
    if value is not None and value <= 0:
        raise ValueError("a TTL is a positive number of milliseconds, or 'none'")
    return value


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _route(value: Any) -> Any:
    return EndpointRoute.parse(value) if isinstance(value, str) else value


Repeated = Annotated[list[str], NoDecode, BeforeValidator(_comma_separated)]
"""A repeatable flag; its variable holds the items separated by commas."""
Size = Annotated[int, Field(ge=0)]


AppSpec = Annotated[str, Flag("the MCPServer to serve, as MODULE:ATTR", metavar="MODULE:ATTR")]
GracefulShutdown = Annotated[
    float,
    Field(ge=0),
    Flag("how long running tools may finish on stop; the rest are retried by the next worker", metavar="SECONDS"),
]
PayloadStorage = Annotated[
    Literal["none", "local", "s3", "gcs"],
    Flag(
        "where large payloads go (default none; dev: local); without storage a payload over Temporal's "
        "limit (2 MiB) fails its task with an error saying so",
        metavar="none|local|s3|gcs",
    ),
]


class AppFields(Settings):
    SECTION: ClassVar[str] = "The app"

    app: AppSpec
    task_queue: Annotated[
        str,
        Flag(
            "Temporal task queue of the app's tasks (default: mcp-tasks/<the MCPServer's name>; "
            "front servers and workers of one app must use the same)",
            metavar="NAME",
        ),
    ] = ""
    """Empty until `dev`, `serve` or `worker` derives it from the app they load."""
    agent_model: Annotated[
        str | None,
        Flag(
            "model of the app's sub-agents, served by the OpenAI-compatible endpoint at OPENAI_BASE_URL "
            "(needs the agent extra)",
            metavar="NAME",
        ),
    ] = None
    openai_base_url: Annotated[str | None, Env("OPENAI_BASE_URL")] = None
    openai_api_key: Annotated[SecretStr | None, Env("OPENAI_API_KEY")] = None

    def openai_key(self) -> str | None:
        """The sub-agents' endpoint's key, if it needs one."""
        return self.openai_api_key.get_secret_value() if self.openai_api_key is not None else None


class FrontFields(Settings):
    SECTION: ClassVar[str] = "The MCP endpoint"

    host: Annotated[str, Flag("address the MCP endpoint binds", metavar="HOST")] = "127.0.0.1"
    port: Annotated[int, Flag("port of the MCP endpoint", metavar="PORT")] = 8000
    ttl_ms: Annotated[
        int | None,
        BeforeValidator(_ttl),
        AfterValidator(_positive),
        Flag("default task TTL for tools that set none (default: 1 day)", metavar="MS|none"),
    ] = None
    """Only applied when given (`model_fields_set`): an app may set its own default."""
    poll_interval_ms: Annotated[int | None, Flag("suggested client poll interval", metavar="MS")] = None
    max_inline_budget_ms: Annotated[
        int | None,
        Field(ge=0),
        Flag(
            "longest a task-capable call waits for its tool before it is answered with the task "
            "(caps each tool's inline_budget_ms; 0: always the task)",
            metavar="MS",
        ),
    ] = None
    closed_task_cache: Annotated[
        int | None,
        Field(ge=0),
        Flag(
            "closed tasks this front serves from memory, without a Temporal call (0 disables; default 10000)",
            metavar="ENTRIES",
        ),
    ] = None
    request_state_key: Annotated[
        Repeated,
        Flag(
            "shared key sealing MRTR requestState across front servers (repeat to rotate; first seals)",
            metavar="SECRET",
            env="MCP_TASKS_REQUEST_STATE_KEYS",
        ),
    ] = []
    max_body_bytes: Annotated[
        int,
        Field(gt=0),
        Flag(
            "largest request body accepted, HTTP 413 beyond (default 1 MiB); "
            "arguments over Temporal's 2 MiB payload limit also need --payload-storage",
            metavar="BYTES",
        ),
    ] = 1024 * 1024
    max_body_bytes_in_flight: Annotated[
        int | None,
        Field(gt=0),
        Flag(
            "request body bytes the front takes in at once, all requests together; a request that does not fit "
            "waits, then gets HTTP 503 and -32051 (default 32 MiB)",
            metavar="BYTES",
        ),
    ] = None
    max_listen_task_ids: Annotated[
        int | None,
        Field(gt=0),
        Flag("task IDs one subscriptions/listen may name, -32602 beyond (default 10000)", metavar="N"),
    ] = None
    max_listens_per_caller: Annotated[
        int | None,
        Field(gt=0),
        Flag(
            "listens one principal (an anonymous client: its address) may hold open on this front, -32050 beyond "
            "(default 8)",
            metavar="N",
        ),
    ] = None
    tokens: Annotated[
        Path | None,
        Flag(
            "require bearer tokens from FILE ('TOKEN PRINCIPAL' per line); tasks bind to the principal",
            metavar="FILE",
        ),
    ] = None
    require_mcp_name: Annotated[
        bool,
        Flag(
            "refuse tasks/* requests without an Mcp-Name header (-32020), for proxies that route by it "
            "(a header naming another task is always refused)"
        ),
    ] = False
    nexus_reply_endpoint: Annotated[
        str | None,
        Flag(
            "Nexus endpoint targeting this namespace and task queue, through which the handler workflows of "
            "Nexus tools report status (docs/nexus.md); without it their status does not cross",
            metavar="NAME",
        ),
    ] = None
    # Activity policy is recorded with each task when it is created, so it is the front's to choose.
    heartbeat_timeout: Annotated[
        float | None,
        Field(gt=0),
        Flag("seconds without a heartbeat before a tool attempt counts as lost (30)", metavar="SECONDS"),
    ] = None
    max_attempts: Annotated[
        int | None, Field(gt=0), Flag("attempts of a tool run lost to a crash or timeout (3)", metavar="N")
    ] = None
    tool_timeout: Annotated[
        float | None, Field(gt=0), Flag("seconds one tool attempt may run (6 h)", metavar="SECONDS")
    ] = None
    push: Annotated[Literal["poll", "feed"], BeforeValidator(_lower), Env("MCP_TASKS_PUSH")] = "feed"
    """How a front follows what it pushes: the task feed, or a history long poll per task (docs/operations.md)."""
    push_give_up_s: Annotated[float, Field(gt=0), Env("MCP_TASKS_PUSH_GIVE_UP_S")] = DEFAULT_PUSH_GIVE_UP_S
    """How long a front retries a task's history before ending its listeners' streams (docs/operations.md)."""


class JwtFields(Settings):
    SECTION: ClassVar[str] = "JWT bearer tokens (instead of --tokens)"

    jwt_jwks: Annotated[
        str | None,
        Flag(
            "verify bearer JWTs against this JWKS (a file, re-read when it changes, or the identity provider's URL)",
            metavar="FILE|URL",
        ),
    ] = None
    jwt_issuer: Annotated[str | None, Flag("required `iss`", metavar="URL")] = None
    jwt_audience: Annotated[str | None, Flag("required `aud`", metavar="AUD")] = None
    jwt_principal_claim: Annotated[
        str, Flag("claim naming the principal tasks bind to (default: sub)", metavar="CLAIM")
    ] = "sub"
    jwt_scope: Annotated[
        Repeated,
        Flag(
            "scope every token must carry (repeatable; HTTP 403 without it)",
            metavar="SCOPE",
            env="MCP_TASKS_JWT_SCOPES",
        ),
    ] = []
    public_url: Annotated[
        str | None,
        Flag(
            "this server's MCP endpoint as clients reach it; with JWTs, publishes RFC 9728 metadata naming the issuer",
            metavar="URL",
        ),
    ] = None


class FairnessFields(Settings):
    SECTION: ClassVar[str] = "Fairness between principals"
    DESCRIPTION: ClassVar[str] = (
        "When workers are busy, Temporal dispatches each task queue by tool priority, then round-robin over "
        "fairness keys (one per principal, a hash of it), then in order. The server needs fairness enabled "
        "(docs/operations.md); dev enables it."
    )

    fairness_keys: Annotated[
        bool,
        Flag(
            "give each principal's tasks their own fairness key; --no-fairness-keys puts every task in one "
            "first-in, first-out line (default: on)",
            negatable=True,
        ),
    ] = True
    fairness_weight: Annotated[
        Repeated,
        AfterValidator(_each(parse_weight)),
        Flag(
            f"a user's share against the others' 1, named as the token file or the JWT's principal claim names "
            f"them ({MIN_WEIGHT} to {MAX_WEIGHT:g}; repeatable)",
            metavar="PRINCIPAL=WEIGHT",
            env="MCP_TASKS_FAIRNESS_WEIGHTS",
        ),
    ] = []


class WorkerFields(Settings):
    SECTION: ClassVar[str] = "The worker"

    max_concurrent_tools: Annotated[int, Field(gt=0), Flag("tool executions a worker runs at once", metavar="N")] = 100
    max_cached_workflows: Annotated[
        int, Field(ge=0), Flag("task workflows kept in memory, about 150 KB each", metavar="N")
    ] = 1000
    graceful_shutdown: GracefulShutdown = 30.0


class DeploymentFields(Settings):
    SECTION: ClassVar[str] = "Worker versioning"
    DESCRIPTION: ClassVar[str] = (
        "With both, the worker registers as this build of a Temporal worker deployment: pinned tasks finish on "
        "the build they started on, auto-upgrade ones move to the current build (docs/operations.md)."
    )

    deployment_name: Annotated[str | None, Flag("the worker deployment", metavar="NAME")] = None
    build_id: Annotated[str | None, Flag("this worker's build (e.g. the release)", metavar="ID")] = None


class ConnectionFields(Settings):
    """The `temporal` CLI's connection flags: their variables are Temporal's own, read with its profile."""

    SECTION: ClassVar[str] = "Temporal connection"
    DESCRIPTION: ClassVar[str] = (
        "Unset flags come from the TEMPORAL_* environment variables and the temporal.toml profile, "
        "as for the temporal CLI."
    )

    address: Annotated[
        str | None,
        Flag(
            f"Temporal frontend (default {DEFAULT_ADDRESS})",
            names=("--address", "--temporal"),
            metavar="HOST:PORT",
            env="TEMPORAL_ADDRESS",
            temporal=True,
        ),
    ] = None
    namespace: Annotated[
        str | None,
        Flag(f"(default {DEFAULT_NAMESPACE!r})", metavar="NAMESPACE", env="TEMPORAL_NAMESPACE", temporal=True),
    ] = None
    api_key: Annotated[
        SecretStr | None,
        Flag(
            "Temporal Cloud API key; prefer the variable, which `ps` does not show (implies TLS)",
            metavar="KEY",
            env="TEMPORAL_API_KEY",
            temporal=True,
        ),
    ] = None
    tls: Annotated[bool | None, Flag("TLS with the system CAs", env="TEMPORAL_TLS", temporal=True, negatable=True)] = (
        None
    )
    tls_ca_path: Annotated[
        Path | None,
        Flag("CA that signed the server", metavar="PEM", env="TEMPORAL_TLS_SERVER_CA_CERT_PATH", temporal=True),
    ] = None
    tls_cert_path: Annotated[
        Path | None,
        Flag("client certificate, mTLS", metavar="PEM", env="TEMPORAL_TLS_CLIENT_CERT_PATH", temporal=True),
    ] = None
    tls_key_path: Annotated[
        Path | None,
        Flag("client private key, mTLS", metavar="PEM", env="TEMPORAL_TLS_CLIENT_KEY_PATH", temporal=True),
    ] = None
    tls_server_name: Annotated[
        str | None,
        Flag("name expected in the server certificate", metavar="NAME", env="TEMPORAL_TLS_SERVER_NAME", temporal=True),
    ] = None
    profile: Annotated[
        str | None,
        Flag("profile of the config file (default 'default')", metavar="NAME", env="TEMPORAL_PROFILE", temporal=True),
    ] = None
    config_file: Annotated[
        Path | None,
        Flag("(default the temporal CLI's)", metavar="TOML", env="TEMPORAL_CONFIG_FILE", temporal=True),
    ] = None

    def connection_options(self) -> ConnectionOptions:
        """The flags given; the unset ones stay `None`, for the environment's profile to fill."""
        from mcp_tasks_temporal.temporal.connection import ConnectionOptions

        return ConnectionOptions(
            address=self.address,
            namespace=self.namespace,
            api_key=self.api_key.get_secret_value() if self.api_key is not None else None,
            tls=self.tls,
            tls_ca_path=self.tls_ca_path,
            tls_cert_path=self.tls_cert_path,
            tls_key_path=self.tls_key_path,
            tls_server_name=self.tls_server_name,
            profile=self.profile,
            config_file=self.config_file,
        )


class CodecFields(Settings):
    SECTION: ClassVar[str] = "Payload encryption"
    DESCRIPTION: ClassVar[str] = (
        f"AES-256-GCM with the keys in --codec-key-file or ${CODEC_KEYS_ENV} (base64, 32 bytes each; the first "
        "encrypts, all decrypt), or any PayloadCodec with --codec. Every process of a deployment needs the same."
    )

    codec_key_file: Annotated[Path | None, Flag("AES-256-GCM keys, one per line, newest first", metavar="FILE")] = None
    codec: Annotated[
        str | None, Flag("a PayloadCodec instance, or a callable returning one", metavar="MODULE:ATTR")
    ] = None
    codec_keys: Annotated[SecretStr | None, Env(CODEC_KEYS_ENV)] = None
    codec_allow_plaintext: Annotated[bool, Env("MCP_TASKS_CODEC_ALLOW_PLAINTEXT")] = False

    def payload_codec(self) -> PayloadCodec | None:
        """The codec the settings ask for, if any.

        Raises:
            CodecError: The codec cannot be loaded or a key is malformed.
        """
        from mcp_tasks_temporal.temporal.codec import ALLOW_PLAINTEXT_ENV, load_codec

        keys: Mapping[str, str] = {CODEC_KEYS_ENV: self.codec_keys.get_secret_value()} if self.codec_keys else {}
        plaintext = {ALLOW_PLAINTEXT_ENV: "1"} if self.codec_allow_plaintext else {}
        return load_codec(spec=self.codec, key_file=self.codec_key_file, environ={**keys, **plaintext})


class StorageFields(Settings):
    SECTION: ClassVar[str] = "Large payloads"
    DESCRIPTION: ClassVar[str] = (
        "Payloads over the threshold (results, arguments, answers) are stored outside Temporal and the history "
        "keeps a reference. Every front server and worker of a deployment needs the same settings."
    )

    payload_storage: PayloadStorage = "none"
    payload_dir: Annotated[
        Path | None, Flag("directory of the local driver (dev: STATE_DIR/payloads)", metavar="DIR")
    ] = None
    payload_bucket: Annotated[
        str | None,
        Flag(
            "bucket of the s3 or gcs driver, which must exist; credentials and region come from the provider's "
            "usual environment (AWS_*, GOOGLE_APPLICATION_CREDENTIALS)",
            metavar="NAME",
        ),
    ] = None
    payload_endpoint_url: Annotated[
        str | None, Flag("an S3-compatible endpoint instead of AWS's, e.g. MinIO", metavar="URL")
    ] = None
    payload_threshold: Annotated[
        Size, Flag(f"payloads this large or larger are stored (default {DEFAULT_THRESHOLD})", metavar="BYTES")
    ] = DEFAULT_THRESHOLD
    payload_max_bytes: Annotated[
        Size,
        Flag(f"largest payload stored; a larger result fails its task (default {DEFAULT_MAX_BYTES})", metavar="BYTES"),
    ] = DEFAULT_MAX_BYTES

    def storage(self) -> StorageSettings:
        """Where payloads over the threshold go.

        Raises:
            PayloadStorageError: The chosen driver misses its directory or bucket.
        """
        from mcp_tasks_temporal.temporal.payload_options import BUCKET_ENV, DIR_ENV
        from mcp_tasks_temporal.temporal.payload_storage import PayloadStorageError, StorageSettings

        if self.payload_storage == "none":
            return StorageSettings()
        settings = StorageSettings(
            kind=self.payload_storage,
            directory=self.payload_dir,
            bucket=self.payload_bucket,
            endpoint_url=self.payload_endpoint_url,
            threshold=self.payload_threshold,
            max_bytes=self.payload_max_bytes,
        )
        if self.payload_storage == "local" and settings.directory is None:
            raise PayloadStorageError(f"--payload-storage local needs --payload-dir (${DIR_ENV})")
        if self.payload_storage in ("s3", "gcs") and not settings.bucket:
            raise PayloadStorageError(
                f"--payload-storage {self.payload_storage} needs --payload-bucket (${BUCKET_ENV})"
            )
        return settings


class OwnerKeyFields(Settings):
    """The owner-key secret every front, worker, `admin` and `audit` of a deployment shares (temporal/ids.py)."""

    owner_secret: Annotated[SecretStr | None, Env("MCP_TASKS_OWNER_SECRET")] = None
    legacy_owner_keys: Annotated[bool, Env("MCP_TASKS_LEGACY_OWNER_KEYS")] = False

    def owner_keying(self) -> OwnerKeying:
        """How this process keys owner keys.

        Raises:
            OwnerSecretError: The secret is too short to key anything; a start stops on it, not a request.
        """
        from mcp_tasks_temporal.temporal.ids import OwnerKeying

        secret = self.owner_secret.get_secret_value() if self.owner_secret is not None else None
        return OwnerKeying.of(secret, "1" if self.legacy_owner_keys else None)


class ObservabilityFields(Settings):
    SECTION: ClassVar[str] = "Observability"

    otel: Annotated[
        bool,
        Flag("export OpenTelemetry traces (also on when the standard OTEL_EXPORTER_OTLP_* variables are set)"),
    ] = False
    metrics_port: Annotated[
        int | None,
        Flag("serve Prometheus metrics (Temporal SDK and this process's) at http://HOST:PORT/metrics", metavar="PORT"),
    ] = None
    metrics_host: Annotated[
        str, Flag("address the metrics endpoint binds (0.0.0.0 in a container)", metavar="HOST")
    ] = "127.0.0.1"


class WebUiFields(Settings):
    temporal_ui: Annotated[
        str | None,
        Flag(
            "Temporal Web UI address; tasks/get and the operator commands then link each task's page",
            metavar="URL",
            env="TEMPORAL_UI_ADDRESS",
        ),
    ] = None


NexusRoute = Annotated[EndpointRoute, BeforeValidator(_route)]
NexusRoutes = Annotated[list[NexusRoute], NoDecode, BeforeValidator(_comma_separated)]
