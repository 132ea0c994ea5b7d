"""Retrying a failing Temporal call without hammering it or the log."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import anyio


class GaveUpError(Exception):
    """The call kept failing for longer than the streak may last."""


@dataclass
class Backoff:
    """Exponential waits between attempts, capped; one log line per failure streak, one when it ends.

    `what` names the call in the log, so it must hold no secret (a task id is fine, a principal is not).
    """

    what: str
    logger: logging.Logger
    initial_s: float = 1.0
    cap_s: float = 30.0
    give_up_after_s: float = 300.0
    _delay_s: float = field(default=0.0, init=False)
    _streak_started: float | None = field(default=None, init=False)

    def next_delay(self) -> float:
        self._delay_s = min(self.cap_s, self._delay_s * 2) if self._delay_s else self.initial_s
        return self._delay_s

    async def failed(self, reason: str) -> None:
        """Wait before the next attempt; raise `GaveUpError` once the streak has lasted too long."""
        now = time.monotonic()
        if self._streak_started is None:
            self._streak_started = now
            self.logger.warning("%s is failing (%s); retrying with backoff up to %.0fs", self.what, reason, self.cap_s)
        elif now - self._streak_started > self.give_up_after_s:
            raise GaveUpError(f"{self.what} kept failing for {self.give_up_after_s:.0f}s ({reason})")
        await anyio.sleep(self.next_delay())

    def succeeded(self) -> None:
        if self._streak_started is not None:
            self.logger.warning("%s works again after %.0fs", self.what, time.monotonic() - self._streak_started)
        self._streak_started = None
        self._delay_s = 0.0
