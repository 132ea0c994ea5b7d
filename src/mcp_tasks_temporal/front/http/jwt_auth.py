"""JWT bearer tokens from an identity provider: signature from its JWKS, issuer, audience, expiry.

Tasks bind to the principal the token names (`sub`, or another claim such as
`email`), qualified by the issuer, so two identity providers can never share a
principal. Only asymmetric algorithms are accepted: the JWKS is public, and an
HMAC "key" taken from it would let anyone sign. `exp`, `nbf` and `iat` must be
NumericDates (RFC 7519: JSON numbers): PyJWT converts with `int()`, so without
this check a string `exp` would be taken and a boolean `nbf` ignored.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlparse

import anyio
import jwt
from mcp.server.auth.provider import AccessToken

logger = logging.getLogger(__name__)

TIME_CLAIMS: Final = ("exp", "nbf", "iat")
"""The claims RFC 7519 defines as NumericDate: a JSON number of seconds since the epoch."""

ASYMMETRIC_ALGORITHMS: Final = (
    *("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    *("ES256", "ES384", "ES512", "EdDSA"),
)


@dataclass(frozen=True)
class JwtSettings:
    """What a token must satisfy. `jwks` is a file path or an `https://` URL."""

    jwks: str
    issuer: str
    audience: str
    principal_claim: str = "sub"
    algorithms: Sequence[str] = ASYMMETRIC_ALGORITHMS
    leeway_s: float = 30.0
    """Clock skew tolerated on `exp` and `nbf` between the identity provider and this server."""
    refresh_cooldown_s: float = 30.0
    """Least time between two fetches of a JWKS URL forced by an unknown `kid`: a stream of tokens with
    made-up key IDs must not turn into a stream of requests to the identity provider."""

    def __post_init__(self) -> None:
        unsupported = set(self.algorithms) - set(ASYMMETRIC_ALGORITHMS)
        if unsupported:
            raise ValueError(f"JWT algorithms must be asymmetric ({', '.join(ASYMMETRIC_ALGORITHMS)})")
        url = urlparse(self.jwks)
        if url.scheme == "http" and url.hostname not in ("localhost", "127.0.0.1", "::1"):
            # Whoever can alter the key set in transit can sign any identity.
            raise ValueError("a JWKS URL must use https (plain http only on localhost)")


class _FileKeys:
    """A JWKS file, re-read when it changes so keys rotate without a restart."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp: tuple[int, int] | None = None
        self._keys: jwt.PyJWKSet | None = None
        self._reload()  # a broken file is a start-up error, not a 401 for everyone later

    def _reload(self) -> None:
        try:
            stat = self._path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp == self._stamp:
                return
            self._keys = jwt.PyJWKSet.from_json(self._path.read_text())
        except OSError as err:
            raise ValueError(f"{self._path}: cannot read the JWKS ({err.strerror})") from None
        except (jwt.PyJWKSetError, jwt.InvalidKeyError, ValueError) as err:
            raise ValueError(f"{self._path}: not a usable JWKS ({type(err).__name__})") from None
        self._stamp = stamp

    async def key_for(self, kid: str | None) -> jwt.PyJWK | None:
        try:
            self._reload()
        except ValueError:
            # Mid-rotation (file being replaced): keep verifying with the keys already loaded.
            logger.warning("could not re-read the JWKS file %s; using the keys loaded before", self._path)
        assert self._keys is not None
        return _pick(self._keys.keys, kid)


class _UrlKeys:
    """A JWKS endpoint, cached for 5 minutes; a token naming an unknown key triggers a refetch (rotation)."""

    def __init__(self, url: str, *, refresh_cooldown_s: float) -> None:
        self._client = jwt.PyJWKClient(
            url, cache_jwk_set=True, lifespan=300, timeout=10, cooldown_duration=refresh_cooldown_s
        )

    async def key_for(self, kid: str | None) -> jwt.PyJWK | None:
        # PyJWKClient fetches with blocking urllib.
        try:
            if kid is None:
                keys = await anyio.to_thread.run_sync(self._client.get_signing_keys)
                return _pick(keys, None)
            return await anyio.to_thread.run_sync(self._client.get_signing_key, kid)
        except jwt.PyJWKClientError as err:
            logger.warning("JWKS lookup failed: %s", err)
            return None


def _pick(keys: Sequence[jwt.PyJWK], kid: str | None) -> jwt.PyJWK | None:
    if kid is None:
        # A token without `kid` is only unambiguous against a single-key set.
        return keys[0] if len(keys) == 1 else None
    return next((key for key in keys if key.key_id == kid), None)


class JwtVerifier:
    """An mcp `TokenVerifier` for JWTs signed by a key of a JWKS."""

    def __init__(self, settings: JwtSettings) -> None:
        self.settings = settings
        if settings.jwks.startswith(("https://", "http://")):
            self._keys: _FileKeys | _UrlKeys = _UrlKeys(settings.jwks, refresh_cooldown_s=settings.refresh_cooldown_s)
        else:
            self._keys = _FileKeys(Path(settings.jwks))

    async def verify_token(self, token: str) -> AccessToken | None:
        settings = self.settings
        try:
            header = jwt.get_unverified_header(token)
            key = await self._keys.key_for(header.get("kid"))
            if key is None:
                logger.info("JWT refused: no key in the JWKS matches its kid")
                return None
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=list(settings.algorithms),
                audience=settings.audience,
                issuer=settings.issuer,
                leeway=settings.leeway_s,
                options={"require": ["exp", "iss", "aud", settings.principal_claim]},
            )
        except jwt.PyJWTError as err:
            # The reason only: the token itself is a credential.
            logger.info("JWT refused: %s", type(err).__name__)
            return None
        malformed = not_numeric_dates(claims)
        if malformed:
            logger.info("JWT refused: claim %s is not a NumericDate (a JSON number)", ", ".join(malformed))
            return None
        principal = claims.get(settings.principal_claim)
        if not isinstance(principal, str) or not principal:
            logger.info("JWT refused: claim %r is not a non-empty string", settings.principal_claim)
            return None
        return AccessToken(
            token=token,
            client_id=principal,
            subject=principal,
            scopes=_scopes(claims),
            expires_at=int(claims["exp"]),
            claims={"iss": claims["iss"]},
        )


def not_numeric_dates(claims: Mapping[str, Any]) -> list[str]:
    """The time claims present in `claims` that are not finite JSON numbers (a string, a boolean, an object)."""
    return [name for name in TIME_CLAIMS if name in claims and not _is_numeric_date(claims[name])]


def _is_numeric_date(value: object) -> bool:
    if isinstance(value, bool):
        return False  # an `int` to Python, not a number to JSON
    if isinstance(value, int):
        return True
    # Python's JSON parser takes `NaN` and `Infinity`, and `1e999` overflows to infinity.
    return isinstance(value, float) and math.isfinite(value)


def _scopes(claims: dict[str, Any]) -> list[str]:
    """RFC 8693 `scope` (space-separated), or the `scp` list some providers issue."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [str(item) for item in scp]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return []
