"""Sub-agent wiring without servers: the model setting, the call check, plugins on the extension, the CLI flag."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic_ai.exceptions import UserError
from pydantic_ai.models.openai import OpenAIChatModel
from temporalio.plugin import SimplePlugin

from mcp_tasks_temporal.contrib.pydantic_ai import sub_agent as agent
from mcp_tasks_temporal.demo import app as demo_app
from mcp_tasks_temporal.demo.server import tasks as demo_tasks
from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.ops.server_commands import configure
from tests.cli_runs import settings_of


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(agent.AGENT_MODEL_ENV, raising=False)
    agent.configure_model(None)
    yield
    agent.configure_model(None)


def test_the_check_names_the_settings_until_a_model_is_configured() -> None:
    refusal = agent.model_check()
    assert refusal is not None and "--agent-model" in refusal and "OPENAI_BASE_URL" in refusal
    agent.configure_model("  ")
    assert agent.model_check() is not None
    agent.configure_model("qwen")
    assert agent.model_check() is None


def test_model_ids_resolve_to_the_configured_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")  # the OpenAI client's own: what it overrides
    assert agent.resolve_model(None, "openai:gpt-5") is None  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="--agent-model"):
        agent.resolve_model(None, agent.DEFAULT_MODEL)  # pyright: ignore[reportArgumentType]
    agent.configure_model(agent.AgentModel("llama", base_url="http://127.0.0.1:1/v1", api_key="k"))
    model = agent.resolve_model(None, agent.MODEL_PREFIX + "qwen2.5-coder")  # pyright: ignore[reportArgumentType]
    assert isinstance(model, OpenAIChatModel) and model.model_name == "qwen2.5-coder"
    assert model.base_url == "http://127.0.0.1:1/v1/"
    default = agent.resolve_model(None, agent.DEFAULT_MODEL)  # pyright: ignore[reportArgumentType]
    assert isinstance(default, OpenAIChatModel) and default.model_name == "llama"


def test_plugins_are_kept_once_by_name() -> None:
    tasks = TasksExtension()
    tasks.add_plugin(SimplePlugin("one"))
    tasks.add_plugin(SimplePlugin("one"))
    tasks.add_plugin(SimplePlugin("two"))
    assert [plugin.name() for plugin in tasks.plugins] == ["one", "two"]


def test_the_demo_registers_review_code_with_what_a_worker_needs() -> None:
    assert "review_code" in demo_tasks.workflow_tools
    assert demo_tasks.workflow_tools["review_code"].activities  # the path check
    names = [plugin.name() for plugin in demo_tasks.plugins]
    assert names == ["PydanticAIPlugin", "mcp_tasks_temporal.contrib.pydantic_ai"]
    assert demo_app.name == "mcp-tasks-temporal-demo"


@pytest.mark.parametrize("command", ["dev", "serve", "worker"])
def test_agent_model_flag_configures_the_process(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")  # read with the flags, when the command starts
    args = settings_of([command, "--app", "mcp_tasks_temporal.demo.server", "--agent-model", "qwen3"])
    configure(demo_app, args)
    assert agent.configured_agent_model() == agent.AgentModel("qwen3", base_url="http://127.0.0.1:1/v1")
