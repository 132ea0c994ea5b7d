"""`mcp-tasks-temporal dev`: the embedded Temporal dev server, the worker process, their lifetimes."""
