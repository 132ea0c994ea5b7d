"""The budget a task-capable call waits for its tool: per tool, the extension's default, the front's cap."""

from __future__ import annotations

import pytest

from mcp_tasks_temporal import FrontSettings, TasksExtension
from mcp_tasks_temporal.front.calls.settled_calls import budget_of
from mcp_tasks_temporal.ops.cli import parse
from mcp_tasks_temporal.ops.server_commands import front_settings
from mcp_tasks_temporal.temporal.tool_registry import DEFAULT_INLINE_BUDGET_MS
from tests.cli_runs import settings_of


def test_a_tool_inherits_the_extensions_budget_unless_it_names_its_own() -> None:
    tasks = TasksExtension(default_inline_budget_ms=700)
    tasks.tool(name="inherits")(lambda: None)
    tasks.tool(name="own", inline_budget_ms=50)(lambda: None)
    tasks.tool(name="never_inline", inline_budget_ms=0)(lambda: None)

    budgets = {name: tasks.options_for(name).inline_budget_ms for name in ("inherits", "own", "never_inline")}  # pyright: ignore[reportOptionalMemberAccess]
    assert budgets == {"inherits": 700, "own": 50, "never_inline": 0}
    assert TasksExtension().default_inline_budget_ms == DEFAULT_INLINE_BUDGET_MS > 0


def test_the_fronts_cap_lowers_a_budget_and_never_raises_it() -> None:
    assert budget_of(700, None) == 700
    assert budget_of(700, 200) == 200
    assert budget_of(50, 200) == 50
    assert budget_of(700, 0) == 0


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="inline_budget_ms"):
        TasksExtension().tool(inline_budget_ms=-1)
    with pytest.raises(ValueError, match="max_inline_budget_ms"):
        FrontSettings(max_inline_budget_ms=-5)


def test_serve_and_dev_hand_the_cap_to_the_fronts_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    def cap_of(argv: list[str]) -> int | None:
        return front_settings(settings_of(argv), search_attributes=False, web_ui=None).max_inline_budget_ms

    monkeypatch.delenv("MCP_TASKS_MAX_INLINE_BUDGET_MS", raising=False)
    assert cap_of(["serve", "--app", "m:a"]) is None, "unset: the app's own budgets"
    assert cap_of(["serve", "--app", "m:a", "--max-inline-budget-ms", "0"]) == 0
    assert settings_of(["dev", "--max-inline-budget-ms", "250"]).max_inline_budget_ms == 250
    monkeypatch.setenv("MCP_TASKS_MAX_INLINE_BUDGET_MS", "300")
    assert cap_of(["serve", "--app", "m:a"]) == 300
    assert cap_of(["serve", "--app", "m:a", "--max-inline-budget-ms", "100"]) == 100, "a flag wins"
    assert parse(["serve", "--app", "m:a", "--max-inline-budget-ms", "-1"]) == 2
