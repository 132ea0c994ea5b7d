"""The one way this project connects to Temporal.

Every client the project makes (front server, worker, `dev`, tests,
benchmarks) uses temporalio's pydantic data converter, so pydantic models work
as workflow inputs and results, and a value written by one process reads back
the same in every other. Its JSON encoding of plain values and dataclasses is
the default converter's, so histories written before still decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.client import Client, Interceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime

from mcp_tasks_temporal.contract import DEFAULT_NAMESPACE


async def connect_temporal(
    address: str,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    interceptors: Sequence[Interceptor] = (),
    runtime: Runtime | None = None,
    plugins: Sequence[Any] = (),
) -> Client:
    """A Temporal client for `address` with the project's data converter.

    `plugins` are the app's (`TasksExtension.plugins`); a worker built on this client applies them too.
    """
    return await Client.connect(
        address,
        namespace=namespace,
        data_converter=pydantic_data_converter,
        interceptors=interceptors,
        runtime=runtime,
        plugins=list(plugins),
    )
