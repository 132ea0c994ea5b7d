"""`--nexus-endpoint NAME=NAMESPACE/TASK_QUEUE`, parsed without importing Temporal (the CLI stays quick to start)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EndpointRoute:
    name: str
    namespace: str
    task_queue: str

    @classmethod
    def parse(cls, text: str) -> EndpointRoute:
        """`NAME=NAMESPACE/TASK_QUEUE`, the form of `--nexus-endpoint`."""
        name, _, target = text.partition("=")
        namespace, _, task_queue = target.partition("/")
        if not name or not namespace or not task_queue:
            raise ValueError(f"{text!r} is not NAME=NAMESPACE/TASK_QUEUE")
        return cls(name.strip(), namespace.strip(), task_queue.strip())
