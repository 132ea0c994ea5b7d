"""Handing the heap a large listen freed back to the OS: glibc's `malloc_trim`, where the C library is glibc.

A listen on thousands of tasks makes transient objects by the thousand: visibility responses, decoded
memos, the first views and their JSON. Python frees them, but glibc keeps freed heap pages mapped for
its next allocations, so without a trim the front's RSS stays near the listen's peak for good.
`malloc_trim(0)` returns every whole free page, in every arena (glibc 2.8 and later), to the OS; what
the front still holds is untouched. With another C library (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from collections.abc import Callable
from functools import cache
from typing import Final

logger = logging.getLogger(__name__)

TRIM_AFTER_TASKS: Final = 256
"""A listen on fewer tasks leaves too little behind to be worth a trim (a few ms of a blocked loop)."""


def worth_trimming(tasks: int) -> bool:
    """Whether a listen that just subscribed `tasks` tasks freed enough to hand back."""
    return tasks >= TRIM_AFTER_TASKS


def is_glibc(confstr: Callable[[str], str | None] = os.confstr) -> bool:
    """Whether this process runs on glibc (`confstr` says "glibc 2.36"; elsewhere it fails or names none)."""
    try:
        version = confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        return False
    return bool(version) and str(version).startswith("glibc ")


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not is_glibc():
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def call(pad: int) -> int:
        return int(trim(pad))

    return call


def release_freed_heap() -> bool:
    """Hand the heap's whole free pages back to the OS; False where the C library cannot (not glibc)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    started = time.perf_counter()
    trim(0)
    logger.debug("malloc_trim took %.1f ms", (time.perf_counter() - started) * 1000)
    return True
