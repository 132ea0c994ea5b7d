"""Finding the user's `MCPServer` from `--app MODULE:ATTR`, as the commands are told it."""

from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Any

from mcp.server.mcpserver import MCPServer

DEMO_APP = "mcp_tasks_temporal.demo:app"


def load_app(spec: str) -> MCPServer[Any]:
    """Import `MODULE:ATTR` and return the `MCPServer` it names.

    The current directory is searched first, as uvicorn does, so `--app
    mypkg.server:app` works next to `mypkg/` without installing it.

    Raises:
        ValueError: One line naming what is wrong and how to fix it (the CLI prints it as is).
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--app takes MODULE:ATTR (for example {DEMO_APP}), not {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and module_name.startswith(err.name) and module_name[len(err.name) :][:1] in ("", "."):
            top = module_name.split(".")[0]
            raise ValueError(
                f"--app {spec}: no module named {err.name!r} (searched {cwd} and the installed packages); "
                f"run from the directory that contains {top}/ or {top}.py, or install it (pip install -e .)"
            ) from None
        raise ValueError(
            f"--app {spec}: importing {module_name} failed: {err} (install the package it needs; "
            f"`python -c 'import {module_name}'` shows where)"
        ) from None
    except Exception as err:
        raise ValueError(
            f"--app {spec}: importing {module_name} raised {type(err).__name__}: {err} "
            f"(`python -c 'import {module_name}'` shows the traceback)"
        ) from None
    if not hasattr(module, attr):
        raise ValueError(
            f"--app {spec}: module {module_name} has no attribute {attr!r}; give MODULE:ATTR of its MCPServer"
        )
    app = getattr(module, attr)
    if not isinstance(app, MCPServer):
        raise ValueError(f"--app {spec}: {module_name}.{attr} is a {type(app).__name__}, not an mcp MCPServer")
    return app  # pyright: ignore[reportUnknownVariableType]
