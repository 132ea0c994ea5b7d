"""Pauses between reads of state that no event announces: short at first, then backing off to a cap.

A loop that reads every 50 ms keeps twenty reads a second going (each one an RPC, and work for the
server that answers it) for as long as the state takes to arrive; on a loaded machine that is longest
exactly when the CPU is scarcest. Backing off keeps the first reads quick and the later ones few.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio


def pauses(first_s: float = 0.02, cap_s: float = 0.5, factor: float = 1.5) -> Iterator[float]:
    """`first_s`, then each pause `factor` times the last, at most `cap_s`: `next(wait)` before each read again."""
    pause = first_s
    while True:
        yield pause
        pause = min(pause * factor, cap_s)


async def until_file(path: Path, bound_s: float) -> None:
    """Until `path` exists (a tool's mark that it reached a step); `TimeoutError` after `bound_s`."""
    wait = pauses()
    with anyio.fail_after(bound_s):
        while not path.exists():
            await anyio.sleep(next(wait))
