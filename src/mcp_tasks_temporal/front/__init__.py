"""The MCP front server: the extension's MCP face, the gateway to Temporal, push, HTTP, auth.

Nothing here runs inside a workflow or an activity; it reaches Temporal only
through `gateway`, which starts, describes, signals and cancels task workflows.
"""
