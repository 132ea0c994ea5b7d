"""A static bearer-token file for internal deployments: `TOKEN PRINCIPAL` per line.

For real identities use JWTs from your identity provider (`jwt_auth`), or give
the `MCPServer` your own `TokenVerifier` (OAuth introspection): tasks bind to
whatever principal it reports.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from mcp.server.auth.provider import AccessToken


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class StaticTokenVerifier:
    """Maps bearer tokens to principals.

    Tokens are kept and looked up by their SHA-256, so the lookup's timing says
    nothing about how much of a guessed token was right, and a memory dump does
    not hand out usable tokens.
    """

    def __init__(self, tokens: dict[str, str]) -> None:
        self._principals = {_digest(token): principal for token, principal in tokens.items()}

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = self._principals.get(_digest(token))
        if principal is None:
            return None
        return AccessToken(token=token, client_id=principal, subject=principal, scopes=[])


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
