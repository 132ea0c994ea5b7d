"""The app's own Temporal plugins (`TasksExtension.add_plugin`), as a worker or a client takes them.

`McpTasksPlugin` applies them to each worker after the app's workflows are on it: pydantic-ai's
plugin registers the activities of the agents each workflow declares, so it must see them. A
plugin given to a client would configure the client's workers before that, so a process whose
workers are built on `McpTasksPlugin` gives its client only their client side (`ClientPart`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import temporalio.client
from mcp.server.mcpserver import MCPServer
from temporalio.client import ClientConfig
from temporalio.service import ConnectConfig, ServiceClient

from mcp_tasks_temporal.sdk_compat import server_extensions
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolRegistry


@runtime_checkable
class _PluginRegistry(Protocol):
    """What a worker reads from the app's extension for its Temporal plugins (no front code imported)."""

    @property
    def plugins(self) -> Sequence[Any]: ...


def app_plugins(app: MCPServer[Any]) -> list[Any]:
    """The app's own Temporal plugins, as its `TasksExtension` registered them (`add_plugin`)."""
    for extension in server_extensions(app):
        if isinstance(extension, WorkflowToolRegistry) and isinstance(extension, _PluginRegistry):
            return list(extension.plugins)
    return []


class ClientPart(temporalio.client.Plugin):
    """A plugin's client side only: a client whose workers get the plugin from `McpTasksPlugin`.

    A plugin given to a client configures each of its workers before the worker's own plugins,
    so before `McpTasksPlugin` adds the app's workflows; this one stays on the client.
    """

    def __init__(self, plugin: temporalio.client.Plugin) -> None:
        self.plugin = plugin

    def name(self) -> str:
        return self.plugin.name()

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        return self.plugin.configure_client(config)

    async def connect_service_client(
        self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
    ) -> ServiceClient:
        return await self.plugin.connect_service_client(config, next)


def app_client_plugins(app: MCPServer[Any]) -> list[temporalio.client.Plugin]:
    """The app's plugins for the client of a process whose workers are built with `McpTasksPlugin`."""
    return [ClientPart(plugin) for plugin in app_plugins(app) if isinstance(plugin, temporalio.client.Plugin)]
