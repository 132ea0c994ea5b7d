"""The front server's fairness flags, importable without Temporal (`--help` stays fast).

`temporal.fairness_options` holds the weights' rules, `fairness.FairnessPolicy` reads what
the flags set; `ops.settings` gives each its `MCP_TASKS_` variable.
"""

from __future__ import annotations

import argparse

from mcp_tasks_temporal.temporal.fairness_options import MAX_WEIGHT, MIN_WEIGHT, parse_weight


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
