"""What an operator command line asks for, and the exit statuses it ends with: shared by `operator_cli`,
which parses it, and the commands that run it (`audit_command`, `admin_commands`, `deployment_admin`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from mcp_tasks_temporal.ops.settings.processes import AuditSettings, DeploymentSettings, OperatorSettings

EXIT_INCOMPATIBLE = 1
EXIT_USAGE = 2
EXIT_DECLINED = 3
EXIT_VERIFY_ERROR = 3
EXIT_UNREACHABLE = 6

AUDIT_EXIT_STATUSES = """\b
Exit status:
  0  the story was printed; with --verify, the installed code replays every run (verify: compatible)
  1  --verify: the installed code does not replay the history (verify: incompatible)
  2  usage: bad arguments, an unknown task, an encrypted history without its keys
  3  --verify could not replay the history (verify: error): its workflow is not installed here (--app),
     or the replay failed for another reason
  6  Temporal is unreachable"""

ADMIN_EXIT_STATUSES = """\b
Exit status:
  0  done
  2  usage: bad arguments, an unknown task ID, a cancel without a terminal to ask and without --yes
  3  the operator declined `admin cancel`
  6  Temporal is unreachable"""


@dataclass(frozen=True)
class AuditArgs:
    settings: AuditSettings
    task: str
    principal: str | None = None
    format: Literal["text", "json", "markdown"] = "text"
    verify: bool = False


@dataclass(frozen=True)
class AdminArgs:
    settings: OperatorSettings
    command: str
    task_ids: tuple[str, ...] = ()
    owner: str | None = None
    tool: str | None = None
    status: str | None = None
    older_than: timedelta | None = None
    json: bool = False
    yes: bool = False


@dataclass(frozen=True)
class DeploymentArgs:
    settings: DeploymentSettings
    command: str
    json: bool = False
    build_id: str = ""
    wait: float = 10.0
