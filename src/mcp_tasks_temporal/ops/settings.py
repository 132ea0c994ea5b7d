"""Every server option's environment variable, named and read in one place.

Each option of `dev`, `serve`, `worker` and `codec-server` can be set by an
environment variable, `MCP_TASKS_` plus the flag in capitals (`--max-body-bytes`
is `MCP_TASKS_MAX_BODY_BYTES`) unless `NAMES` says otherwise. A flag on the
command line wins over its variable, and the variable over the built-in default.
`--help` shows each variable next to its flag. A variable's value is parsed
exactly as the flag's would be, so a bad one stops the command with argparse's
one-line error instead of a traceback. The Temporal connection and codec options
read `TEMPORAL_*` and their own variables where they are defined, and their help
already names them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Final

from mcp_tasks_temporal.sdk_compat import parser_actions
from mcp_tasks_temporal.temporal.ids import LEGACY_OWNERS_ENV, OWNER_SECRET_ENV, OwnerKeying

PREFIX: Final = "MCP_TASKS_"

NAMES: Final[Mapping[str, Mapping[str, str]]] = {
    # Plural names for repeatable flags (a comma-separated list in the variable).
    "*": {
        "--request-state-key": "MCP_TASKS_REQUEST_STATE_KEYS",
        "--jwt-scope": "MCP_TASKS_JWT_SCOPES",
        "--fairness-weight": "MCP_TASKS_FAIRNESS_WEIGHTS",
        "--nexus-namespace": "MCP_TASKS_NEXUS_NAMESPACES",
        "--nexus-endpoint": "MCP_TASKS_NEXUS_ENDPOINTS",
    },
    # The variable Temporal's own tools use for the Web UI.
    "serve": {"--temporal-ui": "TEMPORAL_UI_ADDRESS"},
    # The codec server usually runs beside a front server, whose --host/--port variables it must not take.
    "codec-server": {
        "--host": "MCP_TASKS_CODEC_HOST",
        "--port": "MCP_TASKS_CODEC_PORT",
        "--ui-origin": "MCP_TASKS_CODEC_UI_ORIGINS",
        "--tokens": "MCP_TASKS_CODEC_TOKENS",
    },
}


def environment() -> Mapping[str, str]:
    """The process's environment variables: every read in the package comes through here."""
    return os.environ


def variable(name: str) -> str | None:
    """One environment variable, `None` when unset or empty."""
    return os.environ.get(name) or None


def export_variable(name: str, value: str) -> None:
    """Set a variable for this process and the children it starts (the worker `dev` runs)."""
    os.environ[name] = value


def owner_keying() -> OwnerKeying:
    """The owner keying `$MCP_TASKS_OWNER_SECRET` and `$MCP_TASKS_LEGACY_OWNER_KEYS` ask for, as set now.

    Raises:
        OwnerSecretError: The secret is too short to key anything; a start stops on it, not a request.
    """
    return OwnerKeying.of(variable(OWNER_SECRET_ENV), variable(LEGACY_OWNERS_ENV))


def variable_for(command: str, flag: str) -> str:
    """The environment variable of `flag` in `command` (`""` for the top-level options)."""
    named = NAMES.get(command, {}).get(flag) or NAMES["*"].get(flag)
    return named or PREFIX + flag.lstrip("-").upper().replace("-", "_")


def apply_environment(parser: argparse.ArgumentParser, command: str, environ: Mapping[str, str] | None = None) -> None:
    """Name each option's variable in its help and take its value, when set, as the option's default."""
    environ = os.environ if environ is None else environ
    for action in parser_actions(parser):
        flags = [flag for flag in action.option_strings if flag.startswith("--")]
        if not flags or action.dest == "help" or (action.help and "$" in action.help):
            continue
        name = variable_for(command, flags[0])
        action.help = f"{action.help} (${name})" if action.help else f"(${name})"
        raw = environ.get(name, "")
        if not raw:
            continue
        action.default = _default_from(action, raw, name, parser)
        action.required = False


def _default_from(action: argparse.Action, raw: str, name: str, parser: argparse.ArgumentParser) -> object:
    if action.nargs == 0:  # a switch (--otel, --tls/--no-tls)
        value = raw.strip().lower()
        if value in ("1", "true", "yes", "on"):
            return True
        if value in ("0", "false", "no", "off"):
            return False
        parser.error(f"${name}: {raw!r} is not a yes/no value (true, false, 1, 0)")
    if isinstance(action.default, list):  # a repeatable flag: a comma-separated list
        convert = action.type if callable(action.type) else str
        items: list[object] = []
        for item in (part.strip() for part in raw.split(",")):
            if not item:
                continue
            try:
                items.append(convert(item))
            except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
                parser.error(f"${name}: {item!r} is not valid: {exc}")
        return items
    convert = action.type if callable(action.type) else str
    try:
        value = convert(raw)
    except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
        parser.error(f"${name}: {raw!r} is not valid: {exc}")
    if action.choices is not None and value not in action.choices:
        parser.error(f"${name}: {raw!r} is not one of {', '.join(map(str, action.choices))}")
    return value
