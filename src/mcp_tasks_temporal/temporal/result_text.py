"""A tool result's text that repeats its `structuredContent` is stored once.

An `MCPServer` tool with an output schema answers with `structuredContent` and,
for clients that read only `content`, the same value again as text: the value
itself for a wrapped `str` result, its JSON otherwise. Stored as it is, a result
takes twice its size in Temporal (and counts twice against the payload limit).
The activity stores such a text block empty, with a note of where it comes from;
every read fills it back in, so the wire carries both as clients expect.

Only a text block that the note reproduces byte for byte is emptied. Stdlib only:
the workflow's state query expands results inside the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, cast

TEXT_FROM_STRUCTURED: Final = "mcp-tasks-temporal/textFromStructured"
"""Result `_meta` key: content index -> `result` (structuredContent.result) or `json` (structuredContent as JSON)."""

_PLAIN_TEXT_KEYS: Final = frozenset({"type", "text"})


def _as_json(structured: Any) -> str:
    # MCPServer writes the text with pydantic's indent=2 JSON, which this reproduces for JSON values.
    return json.dumps(structured, indent=2, ensure_ascii=False)


def compact(result: dict[str, Any]) -> dict[str, Any]:
    """`result` with each text block that repeats `structuredContent` emptied and noted in `_meta`."""
    structured = result.get("structuredContent")
    content = result.get("content")
    if not isinstance(structured, Mapping) or not isinstance(content, list) or not content:
        return result
    structured_map = cast(Mapping[str, Any], structured)
    wrapped = structured_map.get("result") if set(structured_map) == {"result"} else None
    as_json: str | None = None
    sources: dict[str, str] = {}
    blocks = list(cast(list[Any], content))
    for index, block in enumerate(blocks):
        if not isinstance(block, Mapping) or frozenset(cast(Mapping[str, Any], block)) != _PLAIN_TEXT_KEYS:
            continue
        text = cast(Mapping[str, Any], block).get("text")
        if not isinstance(text, str) or not text or cast(Mapping[str, Any], block).get("type") != "text":
            continue
        if isinstance(wrapped, str) and text == wrapped:
            sources[str(index)] = "result"
        else:
            if as_json is None:
                as_json = _as_json(structured_map)
            if text == as_json:
                sources[str(index)] = "json"
            else:
                continue
        blocks[index] = {"type": "text", "text": ""}
    if not sources:
        return result
    meta = dict(cast(Mapping[str, Any], result.get("_meta") or {}))
    meta[TEXT_FROM_STRUCTURED] = sources
    return {**result, "content": blocks, "_meta": meta}


def expand(result: dict[str, Any]) -> dict[str, Any]:
    """The result as the tool returned it: what `compact` emptied, filled back in."""
    meta = result.get("_meta")
    if not isinstance(meta, Mapping) or TEXT_FROM_STRUCTURED not in meta:
        return result
    meta_map = dict(cast(Mapping[str, Any], meta))
    sources = cast(Mapping[str, str], meta_map.pop(TEXT_FROM_STRUCTURED) or {})
    structured = cast(Mapping[str, Any], result.get("structuredContent") or {})
    blocks = list(cast(list[Any], result.get("content") or []))
    for index, source in sources.items():
        position = int(index)
        if not 0 <= position < len(blocks):
            continue
        text = structured.get("result") if source == "result" else _as_json(structured)
        blocks[position] = {"type": "text", "text": text}
    expanded = {**result, "content": blocks}
    if meta_map:
        expanded["_meta"] = meta_map
    else:
        expanded.pop("_meta", None)
    return expanded
