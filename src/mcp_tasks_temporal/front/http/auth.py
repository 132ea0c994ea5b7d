"""A static bearer-token file for internal deployments: `TOKEN PRINCIPAL` per line.

For real identities use JWTs from your identity provider (`jwt_auth`), or give
the `MCPServer` your own `TokenVerifier` (OAuth introspection): tasks bind to
whatever principal it reports.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from mcp.server.auth.provider import AccessToken

logger = logging.getLogger(__name__)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class StaticTokenVerifier:
    """Maps bearer tokens to principals.

    Tokens are kept and looked up by their SHA-256, so the lookup's timing says
    nothing about how much of a guessed token was right, and a memory dump does
    not hand out usable tokens. Built `from_file`, it re-reads the file whenever
    it changes (one `stat` per check), so a token removed from it stops working
    at once, open streams included (`credential_life`), with no restart.
    """

    def __init__(self, tokens: dict[str, str], *, path: Path | None = None) -> None:
        self._principals = _digests(tokens)
        self._path = path
        self._stamp = _stamp(path) if path is not None else None

    @classmethod
    def from_file(cls, path: Path) -> StaticTokenVerifier:
        """The tokens of `path`, kept current with it.

        Raises:
            ValueError: The file is unreadable or malformed (see `load_tokens`).
        """
        return cls(load_tokens(path), path=path)

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = self.principal_of(token)
        if principal is None:
            return None
        return AccessToken(token=token, client_id=principal, subject=principal, scopes=[])

    def principal_of(self, token: str) -> str | None:
        """Whom `token` names in the file as it is now; `None` once it is gone from it."""
        self._reload()
        return self._principals.get(_digest(token))

    def _reload(self) -> None:
        if self._path is None:
            return
        stamp = _stamp(self._path)
        if stamp == self._stamp:
            return
        self._stamp = stamp  # once per change, not once per request, whatever comes of it
        try:
            self._principals = _digests(load_tokens(self._path))
        except (OSError, ValueError) as err:
            # Mid-edit, or replaced non-atomically: keep the tokens already loaded until the next change.
            logger.warning("could not re-read the token file: %s", err if isinstance(err, ValueError) else err.strerror)
            return
        logger.info("token file %s re-read: %d tokens", self._path, len(self._principals))


def _digests(tokens: dict[str, str]) -> dict[bytes, str]:
    return {_digest(token): principal for token, principal in tokens.items()}


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file does: an edit in place (time, size) or a replacement (inode)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


def load_tokens(path: Path) -> dict[str, str]:
    """Read `TOKEN PRINCIPAL` lines; blank lines and `#` comments are skipped.

    Raises:
        ValueError: On a malformed line (reported by number, never by content) or a repeated token.
    """
    tokens: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{path}:{number}: expected 'TOKEN PRINCIPAL'")
        token, principal = parts
        if token in tokens:
            raise ValueError(f"{path}:{number}: token listed twice")
        tokens[token] = principal
    if not tokens:
        raise ValueError(f"{path}: no tokens")
    return tokens
