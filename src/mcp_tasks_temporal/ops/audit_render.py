"""Text and Markdown renderings of an audit story (the JSON form is the story itself)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)


def _failure_line(failure: Mapping[str, Any] | None) -> str:
    if not failure:
        return ""
    parts = [str(failure.get("message") or "")]
    if failure.get("type"):
        parts.append(f"type {failure['type']}")
    if failure.get("timeoutType"):
        parts.append(f"timeout {failure['timeoutType']}")
    cause = failure.get("cause")
    if isinstance(cause, Mapping):
        parts.append(f"cause: {_failure_line(cause)}")  # pyright: ignore[reportUnknownArgumentType]
    return "; ".join(p for p in parts if p)


def _overview(story: Mapping[str, Any]) -> list[tuple[str, str]]:
    task, times, outcome = story["task"], story["times"], story["outcome"]
    client: Mapping[str, Any] = task.get("client") or {}
    info: Mapping[str, Any] = client.get("info") or {}
    client_line = f"{info.get('name', '?')} {info.get('version', '')}".strip() if info else "(not recorded)"
    if client.get("protocolVersion"):
        client_line += f" (protocol {client['protocolVersion']})"
    rows = [
        ("task", f"{task.get('taskId')} ({task.get('kind')} task)"),
        ("tool", str(task.get("tool"))),
        ("workflow", f"{task['workflowId']} ({task.get('workflowType')}, {len(task.get('runIds') or [])} run(s))"),
        ("namespace", f"{task.get('namespace')}, task queue {task.get('taskQueue')}"),
        ("owner key", str(task.get("owner"))),
        ("client", client_line),
        ("capabilities", _compact(client.get("capabilities"))),
        ("arguments", _compact(task.get("arguments"))),
        ("created", str(times.get("createdAt"))),
        (
            "expires",
            f"{times['expiresAt']} (ttl {times['ttlMs']} ms)" if times.get("expiresAt") else "never (no ttl)",
        ),
        ("closed", str(times.get("closedAt") or "still running")),
        ("outcome", f"{outcome['status']}" + (f" at {outcome['at']}" if outcome.get("at") else "")),
    ]
    if story.get("webUi"):
        rows.append(("web ui", str(story["webUi"])))
    return rows


def _sections(story: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    outcome = story["outcome"]
    sections: list[tuple[str, list[str], list[list[str]]]] = [
        (
            "Status transitions",
            ["time", "status", "statusMessage"],
            [[t["at"], t["status"], t.get("statusMessage") or ""] for t in story["statusTransitions"]],
        ),
        (
            "Questions",
            ["asked", "key", "request", "answered"],
            [[q["askedAt"], q["key"], _compact(q["request"]), q.get("answeredAt") or "-"] for q in story["questions"]],
        ),
        (
            "Answers",
            ["time", "key", "response", "accepted", "by"],
            [
                [
                    a["at"],
                    a["key"],
                    _compact(a["response"]),
                    "yes" if a["accepted"] else "ignored",
                    a.get("identity") or "",
                ]
                for a in story["answers"]
            ],
        ),
        (
            "Cancel requests",
            ["time", "by", "reason"],
            [[c["at"], c.get("identity") or "", c.get("reason") or ""] for c in story["cancelRequests"]],
        ),
        (
            "Activities",
            [
                "round",
                "type",
                "scheduled",
                "started",
                "closed",
                "attempts",
                "outcome",
                "worker",
                "failure / retried after",
            ],
            [
                [
                    str(a.get("round") if a.get("round") is not None else "-"),
                    a["activityType"],
                    a["scheduledAt"],
                    a.get("startedAt") or "-",
                    a.get("closedAt") or "-",
                    f"{a['attempts']}" + (f"/{a['maximumAttempts']}" if a.get("maximumAttempts") else ""),
                    a["outcome"],
                    a.get("worker") or "",
                    _failure_line(a.get("failure"))
                    or (f"retried after: {_failure_line(a['retryFailure'])}" if a.get("retryFailure") else ""),
                ]
                for a in story["activities"]
            ],
        ),
    ]
    if "result" in outcome:
        sections.append(("Result", [], [[_compact(outcome["result"])]]))
    if "error" in outcome:
        sections.append(("Error", [], [[_compact(outcome["error"])]]))
    if outcome.get("reason"):
        sections.append(("Termination", [], [[f"{outcome['reason']} (by {outcome.get('identity') or '?'})"]]))
    return sections


def render_text(story: Mapping[str, Any]) -> str:
    lines: list[str] = []
    rows = _overview(story)
    width = max(len(name) for name, _ in rows)
    lines += [f"{name.ljust(width)}  {value}" for name, value in rows]
    for title, header, body in _sections(story):
        lines.append("")
        lines.append(f"{title}:" if body else f"{title}: none")
        for row in body:
            cells = (
                row
                if not header
                else [f"{h}={c}" if h not in ("time", "asked") else c for h, c in zip(header, row, strict=True)]
            )
            lines.append("  " + "  ".join(c for c in cells if c))
    return "\n".join(lines)


def _md_cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _md_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in body]
    return lines


def render_markdown(story: Mapping[str, Any]) -> str:
    task = story["task"]
    lines = [f"# Task {task.get('taskId')}: {task.get('tool')}", ""]
    lines += _md_table(["", ""], [[f"**{name}**", value] for name, value in _overview(story)])
    for title, header, body in _sections(story):
        lines += ["", f"## {title}", ""]
        if not body:
            lines.append("None.")
        elif not header:
            lines += ["```json", *(row[0] for row in body), "```"]
        else:
            lines += _md_table(header, body)
    return "\n".join(lines) + "\n"
