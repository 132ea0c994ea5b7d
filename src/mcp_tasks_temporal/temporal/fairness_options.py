"""The fairness weights' rules, importable without Temporal (`--help` stays fast).

`ops.fairness_options` parses the flags with them, `fairness.FairnessPolicy` applies them.
"""

from __future__ import annotations

import math
from typing import Final

MIN_WEIGHT: Final = 0.001
MAX_WEIGHT: Final = 1000.0
"""Temporal clamps weights to this range; a weight outside it is a mistake worth stopping for."""


def parse_weight(entry: str) -> tuple[str, float]:
    """`PRINCIPAL=WEIGHT` as a pair; the principal may itself hold `=` (the last one separates)."""
    principal, sep, raw = entry.rpartition("=")
    if not sep or not principal:
        raise ValueError(f"a fairness weight is PRINCIPAL=WEIGHT, not {entry!r}")
    try:
        weight = float(raw)
    except ValueError:
        raise ValueError(f"the weight of {principal!r} is a number, not {raw!r}") from None
    check_weight(weight)
    return principal, weight


def check_weight(weight: float) -> None:
    if not math.isfinite(weight) or not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        raise ValueError(f"a fairness weight is from {MIN_WEIGHT} to {MAX_WEIGHT:g}, not {weight}")
