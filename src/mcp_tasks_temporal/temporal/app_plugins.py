"""The client side of the app's own Temporal plugins (`TasksExtension.add_plugin`), for a client whose workers get them.

A worker gets the app's plugins after `McpTasksPlugin` (`plugins=[McpTasksPlugin(tasks, app),
*tasks.plugins]`): pydantic-ai's registers the activities of the agents each workflow declares,
so it must see the workflows `McpTasksPlugin` adds. A plugin given to a client would configure
the client's workers before that, so a process whose workers are built so (`worker`, `dev`), or
that has no worker (`serve`), gives its client only their client side: their data converter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import temporalio.client
from temporalio.client import ClientConfig
from temporalio.service import ConnectConfig, ServiceClient

from mcp_tasks_temporal.temporal.tool_registry import TaskToolRegistry


class ClientPart(temporalio.client.Plugin):
    """A plugin's client side only: it configures the client, never the client's workers."""

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


def app_client_plugins(tasks: TaskToolRegistry) -> list[temporalio.client.Plugin]:
    """The client side of the app's plugins, for a process whose workers get them after `McpTasksPlugin`."""
    return [ClientPart(plugin) for plugin in tasks.plugins if isinstance(plugin, temporalio.client.Plugin)]
