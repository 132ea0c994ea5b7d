"""What runs on Temporal, and the contract the front shares with it.

The workflows and activities (`workflows/`, `activities/`), the helpers that tools
and workflows call (`set_status`, `request_input`), building a worker from the app,
and the names, memo keys and signals both sides speak. Nothing here imports the
front: a worker needs no MCP front server code.
"""
