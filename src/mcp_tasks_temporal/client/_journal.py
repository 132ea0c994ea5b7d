"""The client's task journal: every task ID it was given, so a crash never loses one.

There is no `tasks/list` in SEP-2663: a client that forgets an ID can never
find, wait for or cancel that task again. So an ID is written down the moment
the `CreateTaskResult` arrives, before anything else happens. A task seen
terminal leaves the outstanding list (`entries`) but stays findable by ID
(`find`, so `get` and `watch` still know its server) until its TTL
(`createdAt + ttlMs`, after which the server may have discarded it), or for
`FINISHED_WITHOUT_TTL_S` when it has none.

SQLite (stdlib, one small file, safe for several processes at once). Writes are
a few hundred bytes in a local file, so they run inline rather than in a thread.

    journal = Journal("/tmp/journal.sqlite3")
    for entry in journal.entries():
        print(entry.task_id, entry.tool, entry.status)
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Final

from mcp_tasks_temporal.temporal.contract import TERMINAL_STATUSES

FINISHED_WITHOUT_TTL_S: Final = 7 * 24 * 3600.0
_TERMINAL_SQL: Final = "(" + ", ".join(f"'{status}'" for status in sorted(TERMINAL_STATUSES)) + ")"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    server TEXT NOT NULL,
    task_id TEXT NOT NULL,
    tool TEXT,
    status TEXT NOT NULL,
    status_message TEXT,
    created_at TEXT NOT NULL,
    ttl_ms INTEGER,
    expires_at REAL,
    recorded_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (server, task_id)
)
"""
_COLUMNS = "server, task_id, tool, status, status_message, created_at, ttl_ms, expires_at, recorded_at, updated_at"


def default_journal_path() -> Path:
    """`~/.local/state/mcp-tasks-temporal/journal.sqlite3`, the command line's journal when nothing chooses another."""
    return Path.home() / ".local" / "state" / "mcp-tasks-temporal" / "journal.sqlite3"


@dataclass(frozen=True)
class JournalEntry:
    """One task the client was given (finished ones stay until their TTL)."""

    server: str
    """The server it lives on: its URL, or `stdio:` and the command line that starts it."""
    task_id: str
    tool: str | None
    status: str
    status_message: str | None
    created_at: str
    ttl_ms: int | None
    expires_at: float | None
    """`createdAt + ttlMs` as a Unix time; `None` when the task has no TTL."""
    recorded_at: float
    updated_at: float

    @property
    def age_s(self) -> float:
        """Seconds since the task was created (by its `createdAt`), or since it was recorded."""
        from mcp_tasks_temporal.client._models import parse_timestamp  # pydantic: not for `--help`

        created = parse_timestamp(self.created_at)
        start = created.timestamp() if created is not None else self.recorded_at
        return max(time.time() - start, 0.0)


def _expires_at(created_at: str, ttl_ms: int | None) -> float | None:
    from mcp_tasks_temporal.client._models import parse_timestamp  # pydantic: not for `--help`

    created = parse_timestamp(created_at)
    if created is None or ttl_ms is None:
        return None
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return created.timestamp() + ttl_ms / 1000


class Journal:
    """A SQLite file of outstanding task IDs, keyed by server and task ID."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_journal_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every write is durable when the call returns, which is the point of a journal.
        self._db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def record(
        self,
        server: str,
        task_id: str,
        *,
        tool: str | None,
        status: str,
        created_at: str,
        ttl_ms: int | None,
        status_message: str | None = None,
    ) -> None:
        """Write down a task (or refresh what is known about it); a terminal one leaves `entries` but not `find`."""
        now = time.time()
        expires_at = _expires_at(created_at, ttl_ms)
        if expires_at is None and status in TERMINAL_STATUSES:
            expires_at = now + FINISHED_WITHOUT_TTL_S
        self._db.execute(
            f"INSERT INTO tasks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (server, task_id) DO UPDATE SET status = excluded.status, "
            "status_message = excluded.status_message, ttl_ms = excluded.ttl_ms, "
            "expires_at = excluded.expires_at, updated_at = excluded.updated_at, "
            "tool = COALESCE(tasks.tool, excluded.tool)",
            (
                server,
                task_id,
                tool,
                status,
                status_message,
                created_at,
                ttl_ms,
                expires_at,
                now,
                now,
            ),
        )

    def forget(self, server: str, task_id: str) -> None:
        self._db.execute("DELETE FROM tasks WHERE server = ? AND task_id = ?", (server, task_id))

    def prune(self, now: float | None = None) -> int:
        """Cross out the tasks past their TTL; returns how many."""
        cursor = self._db.execute(
            "DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time() if now is None else now,)
        )
        return cursor.rowcount

    def entries(self, server: str | None = None, *, finished: bool = False) -> list[JournalEntry]:
        """The outstanding tasks (of one server, or all), oldest first; with `finished`, also those seen terminal."""
        self.prune()
        where = "1" if finished else f"status NOT IN {_TERMINAL_SQL}"
        if server is None:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM tasks WHERE {where} ORDER BY recorded_at").fetchall()
        else:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM tasks WHERE server = ? AND {where} ORDER BY recorded_at", (server,)
            ).fetchall()
        return [JournalEntry(*row) for row in rows]

    def find(self, task_id: str) -> JournalEntry | None:
        """The entry for a task ID on any server, finished or not (the most recently recorded, should two share one)."""
        self.prune()
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM tasks WHERE task_id = ? ORDER BY recorded_at DESC LIMIT 1", (task_id,)
        ).fetchone()
        return JournalEntry(*row) if row is not None else None


def server_label(url_or_command: str | list[str]) -> str:
    """How the journal names a server: an HTTP URL without credentials, or `stdio:` plus the command line."""
    if isinstance(url_or_command, list):
        return "stdio:" + shlex.join(url_or_command)
    return _strip_userinfo(url_or_command)


def _strip_userinfo(url: str) -> str:
    # Credentials must not be written to a file that outlives the process.
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"
