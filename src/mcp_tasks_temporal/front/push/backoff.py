"""Retrying a failing Temporal call without hammering it or the log: tenacity's strategies, one streak at a time.

A watcher's calls are long polls that run for hours between failures, so a retry
streak starts at the first failure and ends at the next success, not when the
watcher started: tenacity's exponential wait (with jitter, so thousands of
watchers that lost the same Temporal do not come back in step) and its
stop-after-delay are applied to the streak. What a streak is (the call, its
reason) stays here, where the log lines are written.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import anyio
from tenacity import RetryCallState, stop_after_delay, wait_exponential_jitter


class GaveUpError(Exception):
    """The call kept failing for longer than the streak may last."""


@dataclass
class Backoff:
    """Exponential waits between attempts, capped and jittered; one log line per failure streak, one when it ends.

    `what` names the call in the log, so it must hold no secret (a task id is fine, a principal is not).
    """

    what: str
    logger: logging.Logger
    initial_s: float = 1.0
    cap_s: float = 30.0
    give_up_after_s: float = 300.0
    _streak: RetryCallState | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        # Jitter of up to a tenth of the first wait: spread, never a wait below the one asked for.
        self._wait = wait_exponential_jitter(multiplier=self.initial_s, max=self.cap_s, jitter=self.initial_s / 10)
        self._stop = stop_after_delay(self.give_up_after_s)

    async def failed(self, reason: str) -> None:
        """Wait before the next attempt; raise `GaveUpError` once the streak has lasted too long."""
        if self._streak is None:
            self.logger.warning("%s is failing (%s); retrying with backoff up to %.0fs", self.what, reason, self.cap_s)
        delay = self.next_delay()
        assert self._streak is not None
        if self._stop(self._streak):
            raise GaveUpError(f"{self.what} kept failing for {self.give_up_after_s:.0f}s ({reason})")
        await anyio.sleep(delay)

    def next_delay(self) -> float:
        """Count one more failure in the streak (starting it if none runs) and say how long to wait."""
        if self._streak is None:
            self._streak = RetryCallState(None, None, (), {})  # pyright: ignore[reportArgumentType]
        else:
            self._streak.attempt_number += 1
        self._streak.outcome_timestamp = time.monotonic()
        return self._wait(self._streak)

    def succeeded(self) -> None:
        if self._streak is not None:
            self.logger.warning("%s works again after %.0fs", self.what, time.monotonic() - self._streak.start_time)
        self._streak = None
