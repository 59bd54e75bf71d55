"""Checking the Bot Framework's token on an incoming activity (PyJWT, RS256).

Teams signs nothing in the body: it sends `Authorization: Bearer <JWT>`, issued by the Bot
Framework for this bot. A token is accepted only with our issuer and audience (the app id), not
expired (five minutes' skew, the Bot Framework's own), signed by a key of the JWKS that the OpenID
metadata's `jwks_uri` names (endorsed for Teams when the key lists endorsements), with a
`serviceUrl` claim equal to the activity's, for an activity from Teams (`channelId` msteams). The
same keys sign the bot's other channels (Web Chat, Direct Line), whose clients write `from` and
`channelData` themselves: such an activity names whoever its sender typed, so it is refused.
The keys are cached; an unknown `kid` asks the metadata again, at most once per `REFRESH_MIN`, so
a stream of forged kids cannot make us hammer the issuer. Every refusal is a `TokenRefused` with
a reason for the log (never the token).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiohttp
import jwt
from jwt.types import Options

log = logging.getLogger("adapters.teams")
SKEW = timedelta(minutes=5)
REFRESH_MIN = timedelta(minutes=5)  # an unknown kid asks again no more often than this
REFRESH_MAX = timedelta(hours=24)  # the keys are fetched again at least this often
TIMEOUT_SECONDS = 10
ALGORITHMS = ["RS256"]
CHANNEL = "msteams"  # the Bot Framework's channel id for Teams


class TokenRefused(Exception):
    """The activity's token is missing, forged, expired or not for us (the message says why)."""


@dataclass(frozen=True, slots=True)
class Key:
    key: Any  # what PyJWT verifies with
    endorsements: tuple[str, ...] | None  # the channels the key is endorsed for (None: not listed)


class Keys:
    """The signing keys named by the OpenID metadata, cached by `kid`."""

    def __init__(
        self, metadata_url: str, session: Callable[[], aiohttp.ClientSession], now: Callable[[], datetime]
    ) -> None:
        self._url, self._session, self._now = metadata_url, session, now
        self._keys: dict[str, Key] = {}
        self._fetched: datetime | None = None
        self._lock = asyncio.Lock()

    async def get(self, kid: str) -> Key | None:
        """The key `kid`, fetching the JWKS when it is unknown (or the cache is old)."""
        now = self._now()
        stale = self._fetched is None or now - self._fetched >= REFRESH_MAX
        if kid in self._keys and not stale:
            return self._keys[kid]
        async with self._lock:
            fetched = self._fetched
            may_ask = fetched is None or now - fetched >= REFRESH_MIN or stale
            if (kid not in self._keys or stale) and may_ask:
                await self._refresh(now)
        return self._keys.get(kid)

    async def prefetch(self) -> None:
        """Fetch the keys now (at start), so that the first press waits for nothing."""
        async with self._lock:
            if self._fetched is None:
                await self._refresh(self._now())

    async def _refresh(self, now: datetime) -> None:
        try:
            metadata = await self._json(self._url)
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
                raise ValueError("the OpenID metadata names no jwks_uri")
            keys = (await self._json(jwks_uri)).get("keys")
            if not isinstance(keys, list):
                raise ValueError("the JWKS has no keys")
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.warning("teams: cannot fetch the signing keys (%s); the cached ones stay", exc)
            self._fetched = now  # not again before REFRESH_MIN
            return
        self._keys = dict(_read_keys(keys))
        self._fetched = now

    async def _json(self, url: str) -> Mapping[str, Any]:
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
        async with self._session().get(url, timeout=timeout) as resp:
            if resp.status != 200:
                raise ValueError(f"{url}: HTTP {resp.status}")
            data = await resp.json(content_type=None)
        if not isinstance(data, dict):
            raise ValueError(f"{url}: not a JSON object")
        return data


def _read_keys(keys: list[Any]) -> list[tuple[str, Key]]:
    out = []
    for jwk in keys:
        if not isinstance(jwk, dict) or jwk.get("kty") != "RSA" or not isinstance(jwk.get("kid"), str):
            continue
        try:
            key = jwt.PyJWK(jwk, algorithm="RS256").key
        except jwt.PyJWTError:
            continue
        endorsed = jwk.get("endorsements")
        endorsements = tuple(str(e) for e in endorsed) if isinstance(endorsed, list) else None
        out.append((jwk["kid"], Key(key, endorsements)))
    return out


@dataclass(frozen=True, slots=True)
class Expected:
    """What a token must say: who issued it, for whom, and when it is checked."""

    issuer: str
    audience: str
    now: datetime


async def verify(
    authorization: str | None, activity: Mapping[str, Any], keys: Keys, expected: Expected
) -> Mapping[str, Any]:
    """The token's claims, or TokenRefused saying why."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise TokenRefused("no bearer token")
    try:
        header = jwt.get_unverified_header(token.strip())
    except jwt.PyJWTError:
        raise TokenRefused("the token is not a JWT") from None
    kid = header.get("kid")
    if header.get("alg") not in ALGORITHMS or not isinstance(kid, str):
        raise TokenRefused(f"unexpected token algorithm {str(header.get('alg'))[:20]!r} or no kid")
    channel = activity.get("channelId")
    if channel != CHANNEL:
        raise TokenRefused(f"the activity is from channel {str(channel)[:40]!r}, not {CHANNEL}")
    key = await keys.get(kid)
    if key is None:
        raise TokenRefused("the token is signed by an unknown key")
    if key.endorsements is not None and CHANNEL not in key.endorsements:
        raise TokenRefused(f"the signing key is not endorsed for {CHANNEL}")
    claims = _decode(token.strip(), key, expected)
    _check_times(claims, expected.now)
    service_url = activity.get("serviceUrl")
    if not isinstance(service_url, str) or not service_url or claims.get("serviceUrl") != service_url:
        raise TokenRefused("the token's serviceUrl is not the activity's")
    return claims


def _decode(token: str, key: Key, expected: Expected) -> dict[str, Any]:
    # exp/nbf are checked against the injected clock (`_check_times`), not PyJWT's time.time()
    options: Options = {
        "verify_exp": False,
        "verify_nbf": False,
        "verify_iat": False,
        "require": ["exp", "iss", "aud"],
    }
    try:
        return jwt.decode(
            token, key.key, algorithms=ALGORITHMS, audience=expected.audience, issuer=expected.issuer, options=options
        )
    except jwt.InvalidAudienceError:
        raise TokenRefused("the token is for another audience") from None
    except jwt.InvalidIssuerError:
        raise TokenRefused("the token is from another issuer") from None
    except jwt.InvalidSignatureError:
        raise TokenRefused("the token's signature does not verify") from None
    except jwt.PyJWTError as exc:
        raise TokenRefused(f"the token is invalid ({type(exc).__name__})") from None


def _check_times(claims: Mapping[str, Any], now: datetime) -> None:
    at = now.timestamp()
    exp, nbf = claims.get("exp"), claims.get("nbf")
    if not isinstance(exp, int | float) or isinstance(exp, bool) or at > exp + SKEW.total_seconds():
        raise TokenRefused("the token has expired")
    if nbf is not None and (not isinstance(nbf, int | float) or at < nbf - SKEW.total_seconds()):
        raise TokenRefused("the token is not valid yet")


__all__ = ["Expected", "Keys", "TokenRefused", "verify"]
