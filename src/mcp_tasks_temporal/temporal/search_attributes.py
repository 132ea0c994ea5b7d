"""The search attributes every task workflow carries: `McpTool`, `McpOwner`, `McpStatus` (all Keyword).

They let `temporal workflow list --query 'McpStatus="input_required"'` and the
Web UI find tasks. A namespace only accepts attributes registered on it, and an
upsert of an unregistered one fails the workflow task, so the front server
sets them at start only where the namespace has them, and the workflow keeps
`McpStatus` current only in runs that were started with them: the run's own
start attributes are the durable record of whether they are enabled.
`McpOwner` is the owner key (a hash), never the raw principal.

A front without them starts and says how to register them (`check_namespace`);
a worker, which writes `McpStatus`, refuses to start until they are registered
(`require_on`), with the command that registers them.

Safe to import in the workflow sandbox (temporalio and stdlib only).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

if TYPE_CHECKING:
    from temporalio.client import Client

logger = logging.getLogger(__name__)

MCP_TOOL: Final = SearchAttributeKey.for_keyword("McpTool")
MCP_OWNER: Final = SearchAttributeKey.for_keyword("McpOwner")
MCP_STATUS: Final = SearchAttributeKey.for_keyword("McpStatus")
ALL: Final = (MCP_TOOL, MCP_OWNER, MCP_STATUS)

NAMES: Final = tuple(key.name for key in ALL)
STATUS_PATCH: Final = "mcp-status-search-attribute"
"""`workflow.patched` ID of the `McpStatus` upserts, which older runs never recorded."""


def query_literal(value: str) -> str:
    """`value` as a string literal in a visibility query."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def carries_status() -> bool:
    """From workflow code: whether this run was started with `McpStatus`, so it may keep it current."""
    return workflow.info().typed_search_attributes.get(MCP_STATUS) is not None


def upsert_status(status: str) -> None:
    """From workflow code: keep `McpStatus` at `status`, in the runs that may carry it.

    Only a run started with the attribute may upsert it (the namespace has it registered),
    and histories recorded before the upsert existed replay without it.
    """
    if carries_status() and workflow.patched(STATUS_PATCH):
        workflow.upsert_search_attributes([MCP_STATUS.value_set(status)])  # pyright: ignore[reportUnknownMemberType]


def start_attributes(*, tool: str, owner: str, status: str = "working") -> TypedSearchAttributes:
    """The attributes a task workflow starts with."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(MCP_TOOL, tool),
            SearchAttributePair(MCP_OWNER, owner),
            SearchAttributePair(MCP_STATUS, status),
        ]
    )


def dev_server_flags() -> list[str]:
    """`temporal server start-dev` flags that register the attributes on an embedded server."""
    flags: list[str] = []
    for name in NAMES:
        flags += ["--search-attribute", f"{name}=Keyword"]
    return flags


def create_command(missing: Iterable[str], *, address: str, namespace: str) -> str:
    """The exact `temporal` CLI command that registers the `missing` attributes.

    One `--type` per `--name`: given one `--type` for several names, the CLI creates the first only.
    """
    names = " ".join(f"--name {name} --type Keyword" for name in missing)
    return f"temporal operator search-attribute create --address {address} --namespace {namespace} {names}"


async def missing_on(client: Client, *, namespace: str) -> list[str] | None:
    """Which of the attributes `namespace` lacks (empty: all there), or `None` if it cannot be asked."""
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
    from temporalio.service import RPCError

    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as err:
        logger.warning("could not list the search attributes of namespace %s: %s", namespace, err.message)
        return None
    return [name for name in NAMES if name not in response.custom_attributes]


class SearchAttributesMissing(ValueError):
    """The namespace lacks search attributes the worker writes; the message holds the command that creates them."""


async def require_on(client: Client, *, address: str, namespace: str, fix: str = "") -> None:
    """Refuse a worker whose namespace lacks the attributes; one that cannot be asked starts, with a warning.

    Raises:
        SearchAttributesMissing: one line naming what is missing and the command that registers it (then `fix`).
    """
    missing = await missing_on(client, namespace=namespace)
    if not missing:  # None: it could not be asked, which `missing_on` logged; the check is no reason not to start
        return
    raise SearchAttributesMissing(
        f"namespace {namespace} lacks the search attributes {', '.join(missing)} that task workflows write; "
        f"register them with `{create_command(missing, address=address, namespace=namespace)}`{fix}"
    )


async def check_namespace(client: Client, *, address: str, namespace: str, role: str) -> bool:
    """Whether tasks may carry the attributes; prints how to register them where they are missing."""
    missing = await missing_on(client, namespace=namespace)
    if missing == []:
        return True
    if missing is None:
        print(
            f"mcp-tasks-temporal {role}: could not check the search attributes of namespace {namespace};"
            " tasks run without McpTool/McpOwner/McpStatus",
            file=sys.stderr,
            flush=True,
        )
        return False
    print(
        f"mcp-tasks-temporal {role}: namespace {namespace} lacks the search attributes {', '.join(missing)};"
        " tasks run without them until they are registered with\n"
        f"  {create_command(missing, address=address, namespace=namespace)}",
        file=sys.stderr,
        flush=True,
    )
    return False
