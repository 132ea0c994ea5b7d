"""Old import paths of modules that moved, kept working for a release with a `DeprecationWarning`."""

from __future__ import annotations

import warnings


def warn_moved(old: str, new: str) -> None:
    """Warn, at the line that imported `old`, that it is now `new`."""
    # stacklevel 3: past this function and the old module's own code, to the importing line
    # (the interpreter skips its import machinery's frames).
    warnings.warn(f"{old} moved to {new}: import it from there", DeprecationWarning, stacklevel=3)
