"""Optional integrations, each importable only with its extra installed.

Importing one without its extra raises `MissingExtra`, which names the extra, so an
app can leave out what needs it and serve everything else.
"""

from __future__ import annotations


class MissingExtra(ImportError):
    """An optional integration imported without the extra that brings its dependencies."""

    def __init__(self, integration: str, extra: str, missing: ImportError) -> None:
        self.extra = extra
        self.install = f'pip install "mcp-tasks-temporal[{extra}]"'
        super().__init__(f"{integration} needs the {extra} extra: {self.install} ({missing})", name=missing.name)


__all__ = ["MissingExtra"]
