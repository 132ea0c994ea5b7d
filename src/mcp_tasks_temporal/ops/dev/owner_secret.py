"""`dev`'s owner-key secret: kept in its state directory, so its tasks' owner keys are keyed and stay put.

A deployment sets `MCP_TASKS_OWNER_SECRET` itself (every front, worker, `admin`
and `audit` must share it). `dev` runs all of those from one environment, so
it draws the secret once per state directory and exports it to its worker. A
state directory that already holds tasks from before (a database and no secret
file) keeps the unkeyed keys its tasks were stored under.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Final

from pydantic import SecretStr

from mcp_tasks_temporal.ops.settings import export_variable
from mcp_tasks_temporal.ops.settings.processes import DevSettings
from mcp_tasks_temporal.temporal.ids import OWNER_SECRET_ENV

SECRET_FILE: Final = "owner-secret"
DATABASE_FILE: Final = "temporal.db"


def use_dev_owner_secret(settings: DevSettings) -> DevSettings:
    """`settings` with the owner secret `dev` keys owner keys with, exported for its worker too.

    The environment's secret wins; else the state directory's, drawn on its first start.
    """
    if settings.owner_secret is not None:
        return settings
    secret = _state_dir_secret(settings.state_dir)
    if secret is None:
        return settings
    export_variable(OWNER_SECRET_ENV, secret)  # the worker `dev` starts reads it from its environment
    return settings.model_copy(update={"owner_secret": SecretStr(secret)})


def _state_dir_secret(state_dir: Path | None) -> str | None:
    if state_dir is None:
        return secrets.token_urlsafe(32)  # tasks last as long as this run
    path = state_dir / SECRET_FILE
    if path.exists():
        return path.read_text().strip()
    if (state_dir / DATABASE_FILE).exists():
        return None  # tasks stored under unkeyed owner keys: they stay reachable
    state_dir.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(32)
    # Created readable by its owner only: whoever reads it can tell whose tasks are whose.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secret + "\n")
    return secret
