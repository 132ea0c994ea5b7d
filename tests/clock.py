"""A clock a test moves by hand, for the front's TTL checks (`in_process_front(clock=...)`)."""

from __future__ import annotations

import time
from datetime import timedelta


class ManualClock:
    """Epoch milliseconds that start at the wall clock's and move only when the test says.

    Starting at the real time keeps a task's `createdAt` close to what its workflow sees as its
    start, so the workflow's own TTL timer (on Temporal's time) still fires when the TTL runs out.
    """

    def __init__(self) -> None:
        self._ms = int(time.time() * 1000)

    def __call__(self) -> int:
        return self._ms

    def advance(self, by: timedelta) -> None:
        self._ms += int(by / timedelta(milliseconds=1))
