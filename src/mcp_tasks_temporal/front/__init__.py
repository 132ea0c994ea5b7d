"""The MCP server side, as a library: the extension's MCP face and the endpoint a team mounts (`mcp_endpoint`).

Arranged by what each part serves: `calls/` (tools/call), `task_methods` (tasks/*), `push/`
(subscriptions/listen and the hubs that follow tasks), `legacy/` (the 2025-era protocol), `http/`
(the ASGI endpoint) and `gateway/`, the one door to Temporal. Nothing here runs inside a workflow or an
activity, and nothing reads the environment: a front is configured with `FrontSettings`.
"""
