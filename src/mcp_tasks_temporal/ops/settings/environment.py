"""The process environment: the one place in the package that touches `os.environ`.

The settings models read their variables through pydantic-settings; what
else needs the environment as a whole (the `TEMPORAL_*` variables handed to
`temporalio.envconfig`, a child process's environment, the demo's own
variables) comes through here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def environment() -> Mapping[str, str]:
    """The process's environment variables."""
    return os.environ


def variable(name: str) -> str | None:
    """One environment variable, `None` when unset or empty."""
    return os.environ.get(name) or None


def export_variable(name: str, value: str) -> None:
    """Set a variable for this process and the children it starts (the worker `dev` runs)."""
    os.environ[name] = value
