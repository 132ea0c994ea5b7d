"""The fairness options of the front server, importable without Temporal (`--help` stays fast).

`fairness.FairnessPolicy` reads what they set; `ops.settings` gives each its
`MCP_TASKS_` variable.
"""

from __future__ import annotations

import argparse
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


def _weight_entry(value: str) -> str:
    try:
        parse_weight(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def add_fairness_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "Fairness between principals",
        "When workers are busy, Temporal dispatches each task queue by tool priority, then round-robin over "
        "fairness keys (one per principal, a hash of it), then in order. The server needs fairness enabled "
        "(docs/operations.md); dev enables it.",
    )
    group.add_argument(
        "--fairness-keys",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="give each principal's tasks their own fairness key; --no-fairness-keys puts every task in one "
        "first-in, first-out line (default: on)",
    )
    group.add_argument(
        "--fairness-weight",
        action="append",
        type=_weight_entry,
        default=[],
        metavar="PRINCIPAL=WEIGHT",
        help=f"a user's share against the others' 1, named as the token file or the JWT's principal claim names "
        f"them ({MIN_WEIGHT} to {MAX_WEIGHT:g}; repeatable)",
    )
