"""The front's one door to Temporal: start, read, answer and cancel tasks, and follow them.

Everything the rest of the front knows of Temporal comes through `TemporalTaskGateway`
and the project's own types it answers with; no other front module holds a client or a
workflow handle.
"""

from mcp_tasks_temporal.front.gateway.operations import *  # noqa: F403
from mcp_tasks_temporal.front.gateway.operations import __all__ as __all__
