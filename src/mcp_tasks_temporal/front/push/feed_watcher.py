"""A task the feed hub follows (front/feed_watch.py), kept small: a front may hold tens of thousands."""

from __future__ import annotations

import json
from typing import Any

from mcp_tasks_temporal.front.gateway import task_view
from mcp_tasks_temporal.front.push.task_watch import Listener, Lost, tell_lost


def _pack(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class FeedWatcher:
    """One followed task: its memo packed, and its last view only while no memo and status line rebuild it.

    Most of the time the view last published is the view of the memo and status line as they are
    (`shown`): it is rebuilt when asked for, not kept as a second copy. Before either changes without
    being published (a closing transition, a re-read), the view is packed and kept (`_last`).
    """

    __slots__ = (
        "_heartbeat",
        "_last",
        "_memo",
        "_shown",
        "closing",
        "key",
        "pending",
        "ready",
        "seq",
        "subscribers",
    )

    def __init__(self, key: str, memo: dict[str, Any], seq: int) -> None:
        self.key = key
        self._memo = _pack(memo)
        self.seq = seq
        self.subscribers: dict[Listener, Lost | None] = {}
        self._heartbeat: tuple[str, int] | None = None
        self._last: bytes | None = None
        self._shown = False
        """The view published last is `_view()` of the memo and status line as they are; `_last` is then None."""
        self.ready = False
        """False until the first view is published; items meanwhile wait in `pending`."""
        self.pending: list[tuple[str, bytes]] | None = None
        self.closing = False

    @property
    def task_id(self) -> str:
        return self.key.rsplit("/", 1)[-1]  # the workflow ID ends with it: one string less per watcher

    @property
    def memo(self) -> dict[str, Any]:
        """A copy: store a change with `update_memo`."""
        return json.loads(self._memo)

    def update_memo(self, fields: dict[str, Any]) -> dict[str, Any]:
        memo = json.loads(self._memo)
        self._keep_last(memo)
        memo.update(fields)
        self._memo = _pack(memo)
        return memo

    @property
    def heartbeat(self) -> tuple[str, int] | None:
        """The running tool's newest status line (message, at_ms) when it is newer than the memo's."""
        return self._heartbeat

    @heartbeat.setter
    def heartbeat(self, value: tuple[str, int] | None) -> None:
        if value != self._heartbeat:
            self._keep_last(self.memo)
            self._heartbeat = value

    def _view(self, memo: dict[str, Any]) -> dict[str, Any]:
        return task_view(self.task_id, memo, None, heartbeat=self._heartbeat)

    def _keep_last(self, memo: dict[str, Any]) -> None:
        """The memo (as given) or the status line is about to change: pack the view they made, if it was shown."""
        if self._shown:
            self._last = _pack(self._view(memo))
            self._shown = False

    @property
    def last(self) -> dict[str, Any] | None:
        if self._shown:
            return self._view(self.memo)
        return json.loads(self._last) if self._last is not None else None

    def show(self, memo: dict[str, Any]) -> None:
        """Publish the task as its memo (`memo`, as stored) and status line say, unless that is what it showed."""
        if self._shown:
            return  # neither changed since it was published
        task = self._view(memo)
        last, self._last, self._shown = self._last, None, True
        if last is not None and _pack(task) == last:
            return
        for listener in list(self.subscribers):
            listener(task)

    def publish(self, task: dict[str, Any]) -> None:
        """Publish a view the memo and status line do not make (the task closed), unless that is what it showed."""
        packed = _pack(task)
        shown = _pack(self._view(self.memo)) if self._shown else self._last
        if packed == shown:
            return
        self._last, self._shown = packed, False
        for listener in list(self.subscribers):
            listener(task)

    def lose(self, reason: str) -> None:
        tell_lost(self.subscribers, self.task_id, reason)
