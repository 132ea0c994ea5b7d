"""HTTP: the MCP endpoint as an ASGI app, its authentication, body limits, errors and probes."""
