"""Anonymous tasks bound to the handshake session that created them, provably, on any front server.

Without authentication every caller is the same principal, so `tasks/list`
cannot list by principal: it lists the tasks of the caller's own session. The
session ID a front hands out at `initialize` carries a tag (HMAC under the
fronts' shared `--request-state-key` material), so no client can make one up,
and any front holding the key can check one. A task created under a session
records a keyed hash of it (`binding`), never the session ID itself: whoever
reads the memo in Temporal learns nothing they could present as a session.

Keys rotate as request-state keys do: `keys[0]` tags and binds, every key
checks, and a list matches a binding made under any of them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

_TAG_LABEL: Final = b"mcp-tasks-temporal/session-tag/v1\0"
_BIND_LABEL: Final = b"mcp-tasks-temporal/session-binding/v1\0"
_CURSOR_LABEL: Final = b"mcp-tasks-temporal/list-cursor/v1\0"
_TAG_CHARS: Final = 32
"""192 bits of base64url: far beyond guessing, and short enough for a header."""

_creating_under: ContextVar[str | None] = ContextVar("mcp_tasks_session_binding", default=None)


class SessionKeys:
    """Tags session IDs and binds tasks to them under the fronts' shared key material."""

    def __init__(self, secrets: Sequence[str | bytes]) -> None:
        if not secrets:
            raise ValueError("SessionKeys needs at least one key")
        # Derived, so the same secret never keys two different constructions (request state, owner keys).
        self._keys = [
            hmac.new(secret.encode() if isinstance(secret, str) else bytes(secret), b"session", hashlib.sha256).digest()
            for secret in secrets
        ]

    @classmethod
    def process_local(cls) -> SessionKeys:
        """A key of this process only: sessions it tags are checked by it alone (one front, or none shared)."""
        return cls([os.urandom(32)])

    def tag(self, session_id: str) -> str:
        """`session_id` with its tag appended; what the client is given."""
        return f"{session_id}.{_tag(self._keys[0], _TAG_LABEL, session_id.encode())}"

    def untagged(self, value: str | None) -> str | None:
        """The session ID `value` carries when its tag checks under any key; `None` otherwise."""
        if not value or not value.isascii():
            return None
        session_id, _, tag = value.rpartition(".")
        if not session_id or len(tag) != _TAG_CHARS:
            return None
        if any(hmac.compare_digest(_tag(key, _TAG_LABEL, session_id.encode()), tag) for key in self._keys):
            return session_id
        return None

    def bindings(self, value: str | None) -> list[str]:
        """The bindings a tagged session ID has under each key (first: the current key); none if it does not check."""
        session_id = self.untagged(value)
        if session_id is None:
            return []
        return [hmac.new(key, _BIND_LABEL + session_id.encode(), hashlib.sha256).hexdigest()[:32] for key in self._keys]

    def seal_cursor(self, page_token: bytes, owner: str) -> str:
        """A `tasks/list` cursor for Temporal's `page_token`, good only for the caller it was made for.

        Temporal answers a page token it did not issue with an error it also gives when it is
        unwell; a tag tells a made-up cursor (-32602) from an outage without asking it.
        """
        encoded = base64.urlsafe_b64encode(page_token).decode().rstrip("=")
        tag = _tag(self._keys[0], _CURSOR_LABEL, _cursor_signed(owner, page_token))
        return f"{encoded}.{tag}"

    def open_cursor(self, cursor: str, owner: str) -> bytes | None:
        """The page token a cursor from `seal_cursor` carries for `owner`; `None` for any other cursor."""
        encoded, _, tag = cursor.partition(".")
        if not cursor.isascii() or len(tag) != _TAG_CHARS:
            return None
        try:
            page_token = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except ValueError:
            return None
        signed = _cursor_signed(owner, page_token)
        if any(hmac.compare_digest(_tag(key, _CURSOR_LABEL, signed), tag) for key in self._keys):
            return page_token
        return None


def _cursor_signed(owner: str, page_token: bytes) -> bytes:
    return owner.encode() + b"\0" + page_token


def _tag(key: bytes, label: bytes, data: bytes) -> str:
    digest = hmac.new(key, label + data, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode()[:_TAG_CHARS]


@contextmanager
def creating_under(binding: str | None) -> Generator[None]:
    """Tasks started inside record `binding` (see `creating_binding`)."""
    reset = _creating_under.set(binding)
    try:
        yield
    finally:
        _creating_under.reset(reset)


def creating_binding() -> str | None:
    """The session binding of the task being created in this request, if its session checked.

    Request-scoped like the SDK's authenticated principal, so the create path
    between the request and the workflow's memo needs no extra parameter.
    """
    return _creating_under.get()
