"""Links into the Temporal Web UI."""

from __future__ import annotations

from urllib.parse import quote


def web_ui_link(ui_url: str, namespace: str, workflow_id: str, run_id: str | None = None) -> str:
    """The Temporal Web UI page of a workflow (its latest run unless `run_id` is given)."""
    base = f"{ui_url.rstrip('/')}/namespaces/{quote(namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"
    return f"{base}/{run_id}/history" if run_id else base
