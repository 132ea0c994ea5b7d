"""A JWT's `exp`, `nbf` and `iat` are NumericDates (RFC 7519, section 2: a JSON number), or the token is refused.

PyJWT reads them through `int()`, so left to itself it takes a string `exp` (`"9999999999"` expires in 2286)
and ignores a boolean `nbf`; the verifier refuses each such token, and the endpoint answers 401.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_tasks_temporal.front.http.endpoint import BearerAuth, protected_app
from mcp_tasks_temporal.front.http.jwt_auth import JwtSettings, JwtVerifier, not_numeric_dates

pytestmark = pytest.mark.anyio

ISSUER = "https://idp.example.test/"
AUDIENCE = "mcp-tasks-claim-types"
KID = uuid.uuid4().hex[:12]
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)

NOT_NUMBERS: dict[str, Any] = {
    "a string of digits": "{now}",
    "true": True,
    "false": False,
    "an object": {"seconds": "{now}"},
    "a list": ["{now}"],
    "null": None,
    "NaN": math.nan,
    "infinity": math.inf,
}
"""Values a time claim may not have; `{now}` becomes a time the claim would otherwise accept."""


def token(**claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 600, **claims}
    return jwt.encode(body, KEY, algorithm="RS256", headers={"kid": KID})


def acceptable(claim: str) -> int:
    """A valid time for `claim`, as a number."""
    now = int(time.time())
    return now + 600 if claim == "exp" else now - 5


def as_claim(template: Any, claim: str) -> Any:
    """`template` with `{now}` replaced by a time `claim` would accept, as a string."""
    text = json.dumps(template).replace("{now}", str(acceptable(claim)))
    return json.loads(text) if not isinstance(template, float) else template


@pytest.fixture
def verifier(tmp_path: Path) -> JwtVerifier:
    jwk = {**json.loads(RSAAlgorithm.to_jwk(KEY.public_key())), "kid": KID, "use": "sig"}
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk]}))
    return JwtVerifier(JwtSettings(jwks=str(path), issuer=ISSUER, audience=AUDIENCE))


async def test_time_claims_that_are_not_numbers_are_refused(verifier: JwtVerifier) -> None:
    for claim in ("exp", "nbf", "iat"):
        for what, template in NOT_NUMBERS.items():
            value = as_claim(template, claim)
            assert await verifier.verify_token(token(**{claim: value})) is None, f"{claim} as {what}: {value!r}"


async def test_time_claims_that_are_numbers_are_taken_integer_or_not(verifier: JwtVerifier) -> None:
    now = time.time()
    accepted = await verifier.verify_token(token(exp=now + 600.5, nbf=now - 5.25, iat=now - 1.5))
    assert accepted is not None and accepted.expires_at == int(now + 600.5)
    assert await verifier.verify_token(token(nbf=int(now) - 5)) is not None
    without = token()
    assert await verifier.verify_token(without) is not None, "nbf is optional, and so is iat"


def test_which_claims_are_named() -> None:
    assert not_numeric_dates({"exp": 1, "nbf": 2.5, "iat": 0, "sub": "x"}) == []
    assert not_numeric_dates({"exp": "1", "nbf": True, "iat": 10**30}) == ["exp", "nbf"]
    assert not_numeric_dates({"iat": math.nan}) == ["iat"]


async def test_a_string_exp_gets_401_at_the_endpoint(verifier: JwtVerifier) -> None:
    async def ok(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    app = protected_app(Starlette(routes=[Route("/", ok)]), BearerAuth(verifier))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://front") as http:
        good = await http.get("/", headers={"authorization": f"Bearer {token()}"})
        assert good.status_code == 200, good.text
        stringly = token(exp=str(acceptable("exp")))
        refused = await http.get("/", headers={"authorization": f"Bearer {stringly}"})
        assert refused.status_code == 401, refused.text
