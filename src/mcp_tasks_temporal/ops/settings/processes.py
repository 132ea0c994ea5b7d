"""One settings model per process: what `dev`, `serve`, `worker`, `codec-server`, the client and operator commands read.

Each is the union of the groups it needs (`fields`), validated once when the command
starts and handed down as typed values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, SecretStr

from mcp_tasks_temporal.ops.settings.fields import (
    DEFAULT_UI_ORIGINS,
    DEMO_APP,
    AppFields,
    CodecFields,
    ConnectionFields,
    DeploymentFields,
    FairnessFields,
    FrontFields,
    GracefulShutdown,
    JwtFields,
    NexusRoutes,
    ObservabilityFields,
    OwnerKeyFields,
    PayloadStorage,
    Repeated,
    StorageFields,
    WebUiFields,
    WorkerFields,
)
from mcp_tasks_temporal.ops.settings.model import Env, Flag, Settings
from mcp_tasks_temporal.temporal.contract import DEFAULT_NAMESPACE

STOP_WITH_PARENT_ENV = "MCP_TASKS_STOP_WITH_PARENT"
ALLOW_UNKEYED_OWNER_KEYS_ENV = "MCP_TASKS_ALLOW_UNKEYED_OWNER_KEYS"


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


def _optional_path(value: Any) -> Any:
    return None if isinstance(value, str) and value.strip().lower() == "none" else value


class GlobalSettings(Settings):
    """The options before the command."""

    log_level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR"],
        BeforeValidator(_upper),
        Flag("DEBUG, INFO, WARNING or ERROR", metavar="LEVEL"),
    ] = "WARNING"


class DevSettings(
    AppFields,
    FrontFields,
    JwtFields,
    FairnessFields,
    WorkerFields,
    DeploymentFields,
    CodecFields,
    StorageFields,
    ObservabilityFields,
    OwnerKeyFields,
):
    """`dev`: an embedded Temporal dev server, a worker and the MCP endpoint, in one command."""

    SECTION: ClassVar[str] = "The embedded Temporal"

    app: Annotated[
        str,
        Flag(f"the MCPServer to serve, as MODULE:ATTR (default: the built-in demo, {DEMO_APP})", metavar="MODULE:ATTR"),
    ] = DEMO_APP
    # Ctrl-C in a terminal should not hang on a long tool: its round is retried on the next start.
    graceful_shutdown: GracefulShutdown = 3.0
    payload_storage: PayloadStorage = "local"
    namespace: Annotated[str, Flag("namespace of the embedded Temporal", metavar="NAMESPACE")] = DEFAULT_NAMESPACE
    state_dir: Annotated[
        Path | None,
        BeforeValidator(_optional_path),
        Flag("where the Temporal database lives ('none': nothing outlives this run)", metavar="DIR"),
    ] = Path(".mcp-tasks-temporal")
    nexus_namespace: Annotated[
        Repeated,
        Flag(
            "another namespace on the embedded Temporal, for a Nexus handler's worker (repeatable)",
            metavar="NAMESPACE",
            env="MCP_TASKS_NEXUS_NAMESPACES",
        ),
    ] = []
    nexus_endpoint: Annotated[
        NexusRoutes,
        Flag(
            "create this Nexus endpoint on the embedded Temporal (repeatable); "
            "--nexus-reply-endpoint is created too, targeting --namespace and --task-queue",
            metavar="NAME=NAMESPACE/TASK_QUEUE",
            env="MCP_TASKS_NEXUS_ENDPOINTS",
        ),
    ] = []
    temporal_port: Annotated[int, Flag("port of the embedded Temporal's gRPC frontend", metavar="PORT")] = 7233
    ui_port: Annotated[int, Flag("Temporal Web UI port (0 disables the UI)", metavar="PORT")] = 8233
    in_process_worker: Annotated[
        bool,
        Flag(
            "run the tools in dev's own process (a debugger's breakpoints in a tool then stop there) instead of "
            "a worker process beside it, which lets the front answer faster; implied by --metrics-port, so the one "
            "endpoint has the worker's metrics too"
        ),
    ] = False


class ServeSettings(
    AppFields,
    FrontFields,
    JwtFields,
    FairnessFields,
    ConnectionFields,
    CodecFields,
    StorageFields,
    ObservabilityFields,
    WebUiFields,
    OwnerKeyFields,
):
    """`serve`: the MCP front server, against a Temporal cluster."""

    transport: Annotated[Literal["http", "stdio"], Flag("how clients reach the server", metavar="http|stdio")] = "http"
    allow_unkeyed_owner_keys: Annotated[bool, Env(ALLOW_UNKEYED_OWNER_KEYS_ENV)] = False
    """Serve `--tokens` or `--jwt-jwks` without `$MCP_TASKS_OWNER_SECRET`, owner keys unkeyed: a deliberate risk."""


class WorkerSettings(
    AppFields,
    WorkerFields,
    DeploymentFields,
    ConnectionFields,
    CodecFields,
    StorageFields,
    ObservabilityFields,
    OwnerKeyFields,
):
    """`worker`: a Temporal worker that runs the app's task tools."""

    make_current: Annotated[
        bool,
        Flag(
            "make this build current once the worker polls, so new tasks run on it at once "
            "(otherwise `admin set-current`, after the replay check)"
        ),
    ] = False
    stop_with_parent: Annotated[int | None, Env(STOP_WITH_PARENT_ENV)] = None
    """Set for `dev`'s worker: the pid whose end stops it, so a `kill -9` of `dev` leaves no worker behind."""


class CodecServerSettings(CodecFields):
    """`codec-server`: the remote codec endpoint of the Temporal Web UI and CLI.

    It usually runs beside a front server, whose `--host`/`--port` variables it must not take.
    """

    SECTION: ClassVar[str] = "The codec server"

    host: Annotated[str, Flag("address the codec server binds", metavar="HOST", env="MCP_TASKS_CODEC_HOST")] = (
        "127.0.0.1"
    )
    port: Annotated[int, Flag("port of the codec server", metavar="PORT", env="MCP_TASKS_CODEC_PORT")] = 8081
    ui_origin: Annotated[
        Repeated,
        Flag(
            f"origin of a Temporal Web UI allowed to call it, e.g. https://cloud.temporal.io "
            f"(repeatable; default {', '.join(DEFAULT_UI_ORIGINS)})",
            metavar="URL",
            env="MCP_TASKS_CODEC_UI_ORIGINS",
        ),
    ] = []
    tokens: Annotated[
        Path | None,
        Flag(
            "require a bearer token from FILE ('TOKEN PRINCIPAL' per line) on every call",
            metavar="FILE",
            env="MCP_TASKS_CODEC_TOKENS",
        ),
    ] = None


class ClientSettings(Settings):
    """`call`, `get`, `cancel`, `answer`, `watch`, `tasks`: the task client on the command line."""

    SECTION: ClassVar[str] = "Client settings"

    token: Annotated[
        SecretStr | None,
        Flag("bearer token for the server; never written to the journal", metavar="TOKEN", env="MCP_TASKS_TOKEN"),
    ] = None
    journal: Annotated[
        Path | None,
        Flag(
            "task journal (default: $XDG_STATE_HOME/mcp-tasks-temporal/journal.sqlite3, "
            "XDG_STATE_HOME defaulting to ~/.local/state)",
            metavar="FILE",
        ),
    ] = None
    xdg_state_home: Annotated[Path | None, Env("XDG_STATE_HOME")] = None

    def journal_path(self) -> Path:
        """The journal this command uses."""
        if self.journal is not None:
            return self.journal.expanduser()
        state_home = self.xdg_state_home or Path.home() / ".local" / "state"
        return state_home / "mcp-tasks-temporal" / "journal.sqlite3"

    def bearer_token(self) -> str | None:
        return self.token.get_secret_value() if self.token is not None else None


class OperatorSettings(ConnectionFields, CodecFields, StorageFields, WebUiFields, OwnerKeyFields):
    """`admin tasks` and `admin cancel`: the namespace's tasks, read and cancelled through Temporal."""

    SECTION: ClassVar[str] = "Principals"

    jwt_issuer: Annotated[
        str | None,
        Flag(
            "the front servers' JWT issuer, so a principal is named by its claim as they name it",
            metavar="URL",
        ),
    ] = None


class AuditSettings(OperatorSettings):
    """`audit`: a task's story from its history, and `--verify` against the code installed here."""

    app: Annotated[str | None, Flag("the app whose workflow tools --verify should include", metavar="MODULE:ATTR")] = (
        None
    )


class DeploymentSettings(OperatorSettings):
    """`admin deployment` and `admin set-current`: a worker deployment's builds."""

    deployment_name: Annotated[str, Flag("the worker deployment", metavar="NAME")]
