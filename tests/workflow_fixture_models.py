"""Inputs and outputs of the fixture workflows: shared by workflow, activity and test code."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field


@dataclass
class Greeting:
    name: str
    punctuation: str = "!"


class PipelineRequest(BaseModel):
    """What to build, and where its steps leave their marks for the test to count."""

    ref: str = Field(description="the git ref to build")
    effects: str
    steps: list[str] = Field(default_factory=lambda: ["checkout", "compile", "test", "deploy"])
    gate_step: str | None = None
    """This step waits for `<effects>/release-<step>` before it finishes."""
    approve_before: str | None = None


class PipelineResult(BaseModel):
    ref: str
    steps: list[str]
    deployed: bool


@dataclass
class StepInput:
    effects: str
    step: str
    gated: bool = False


@dataclass
class FailureRequest:
    mode: str
    effects: str = ""


@dataclass
class LoopState:
    round: int = 1
    until: int = 3
    ask_at_end: bool = False
    effects: str = ""
    """When set, each round runs a step gated on `<effects>/release-round-<n>`."""


@dataclass
class Questions:
    kinds: list[str] = field(default_factory=lambda: ["elicitation"])
