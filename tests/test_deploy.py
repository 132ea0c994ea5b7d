"""The production stack, checked without Docker: every command our CLI would refuse fails here first."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_tasks_temporal.ops.cli import Invocation, parse
from tests.processes import REPO_ROOT

COMPOSE = REPO_ROOT / "docker-compose.yml"
ENV_EXAMPLE = REPO_ROOT / ".env.example"
_VARIABLE = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?::?(?P<op>[-?])(?P<arg>[^}]*))?\}")
_SECRET_NAME = re.compile(r"PASSWORD|PWD|SECRET|KEYS?$|TOKEN")


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def env_example() -> dict[str, str]:
    lines = [line for line in ENV_EXAMPLE.read_text().splitlines() if line and not line.startswith("#")]
    return {name: value for name, _, value in (line.partition("=") for line in lines)}


def interpolate(value: str, env: dict[str, str]) -> str:
    """What docker compose substitutes, given an `.env` made from `.env.example`."""

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        assert name in env, f"${{{name}}} is used in docker-compose.yml but missing from .env.example"
        return env[name] or (arg if op == "-" else "")

    return _VARIABLE.sub(substitute, value)


def services(profile: str | None = None) -> dict[str, dict[str, Any]]:
    every = compose()["services"]
    return {name: s for name, s in every.items() if profile is None or profile in s.get("profiles", [])}


def runs_our_cli(service: dict[str, Any]) -> bool:
    # Our image's entrypoint is the CLI; a service overriding it runs something else (the Temporal dev server).
    return "build" in service and "entrypoint" not in service


def test_every_service_has_a_health_check() -> None:
    for name, service in services().items():
        check = service.get("healthcheck", {})
        assert check.get("test") and not check.get("disable"), f"{name} has no health check"


@pytest.mark.parametrize("name", sorted(n for n, s in services().items() if runs_our_cli(s)))
def test_each_command_parses_with_our_cli(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    service = services()[name]
    env = {**env_example(), "MCP_TASKS_REQUEST_STATE_KEYS": "example-key"}
    # The parser reads its defaults from the environment: give it the container's.
    environment: dict[str, object] = service.get("environment") or {}
    for key, value in environment.items():
        monkeypatch.setenv(key, interpolate(str(value), env))
    parsed = parse([str(word) for word in service["command"]])
    if not isinstance(parsed, Invocation):
        pytest.fail(f"{name}: {service['command']} is refused by the CLI (exit {parsed})")
    assert parsed.command in ("serve", "worker")
    args: Any = parsed.settings
    assert args.app, f"{name}: no app to serve"
    if parsed.command == "serve":
        assert args.host == "0.0.0.0", f"{name}: a front in a container must listen beyond its loopback"


def test_production_stack_shape() -> None:
    prod = services("prod")
    fronts = [n for n, s in prod.items() if runs_our_cli(s) and s["command"][0] == "serve"]
    workers = [n for n, s in prod.items() if runs_our_cli(s) and s["command"][0] == "worker"]
    assert len(fronts) == 2 and len(workers) == 2
    nginx = (REPO_ROOT / "deploy" / "nginx.conf").read_text()
    for front in fronts:
        assert re.search(rf"server\s+{front}:8000\b", nginx), f"the load balancer does not reach {front}"
    images = {name: s["image"] for name, s in prod.items() if "build" not in s}
    assert any(image.startswith("temporalio/auto-setup:") for image in images.values())
    assert any(image.startswith("temporalio/ui:") for image in images.values())
    assert any(image.startswith("postgres:") for image in images.values())
    for name, image in images.items():
        tag = image.rpartition(":")[2]
        assert ":" in image and re.match(r"\d+\.\d+", tag), f"{name}: {image} is not pinned to a version"
    assert prod["temporal"]["environment"]["POSTGRES_SEEDS"] == "postgresql"
    assert "dev-temporal" in services("dev"), "the light dev-server setup stays as a profile"


def test_secrets_come_from_the_uncommitted_env_file() -> None:
    for name, service in services().items():
        environment: dict[str, object] = service.get("environment") or {}
        for key, value in environment.items():
            if _SECRET_NAME.search(key):
                assert _VARIABLE.fullmatch(str(value)), f"{name}: {key} must come from .env, not the compose file"
    assert all(not env_example()[key] for key in ("POSTGRES_PASSWORD", "MCP_TASKS_REQUEST_STATE_KEYS"))
    ignored = (REPO_ROOT / ".gitignore").read_text().splitlines()
    assert ".env" in ignored


def test_image_is_multi_stage_non_root_and_carries_no_test_tools() -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    instructions = [line.split(None, 1) for line in dockerfile.splitlines() if line and not line.startswith("#")]
    stages = [args for op, *args in instructions if op == "FROM"]
    assert len(stages) >= 2
    users = [args[0] for op, *args in instructions if op == "USER"]
    assert users and not users[-1].startswith(("root", "0")), "the final stage must not run as root"
    installs = " ".join(args[0] for op, *args in instructions if op == "RUN")
    assert not re.search(r"\[(?:[^\]]*,)?\s*(test|dev)\b", installs), "test or dev extras installed"
    copied = " ".join(args[0] for op, *args in instructions if op == "COPY")
    assert "tests" not in copied.split()
    assert Path(REPO_ROOT / "deploy" / "nginx.conf").is_file()
