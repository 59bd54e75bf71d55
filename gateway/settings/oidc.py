"""`[web.oidc]`: sign in to the web inbox through an OpenID provider (docs/identity.md).

The identity is `web:<email>` when the provider says the e-mail is verified, else `web:<sub>`
(`identity_claim = "sub"` always takes `sub`): `[people]`, `web.approvers` and mail cards
already name people by address, and an unverified address could be anyone's. The groups claim
(`groups_claim`), mapped through `group_map` (claim value -> group name; without one, a value
is taken as the group of that name), puts the person in those `[groups.NAME]` until the next sign-in.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, coerce_all, string, strings, table

IDENTITY_CLAIMS = ("email", "sub")


@dataclass(frozen=True, slots=True)
class OidcSettings:
    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    groups_claim: str = "groups"
    scopes: tuple[str, ...] = ("openid", "email", "profile")
    group_map: Mapping[str, str] = field(default_factory=dict)
    identity_claim: str = "email"

    def groups(self, claimed: object, known: Mapping[str, object]) -> frozenset[str]:
        """The group names a groups claim maps to, of those that exist (`known`); a value the
        map does not name counts only without a map (then the value is the group's name)."""
        values = [claimed] if isinstance(claimed, str) else claimed if isinstance(claimed, list) else []
        names = (self.group_map.get(v) if self.group_map else v for v in values if isinstance(v, str))
        return frozenset(n for n in names if n is not None and n in known)

    def masked(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "client_secret": f"***({len(self.client_secret)} chars)",
            "groups_claim": self.groups_claim,
            "scopes": list(self.scopes),
            "group_map": dict(self.group_map),
            "identity_claim": self.identity_claim,
        }


KEYS: dict[str, Coerce] = {
    "issuer": string,
    "client_id": string,
    "client_secret": string,
    "groups_claim": string,
    "scopes": strings,
    "group_map": table,
    "identity_claim": string,
}
_REQUIRED = ("issuer", "client_id", "client_secret")


def oidc_table(key: str, v: Any) -> OidcSettings:
    """`[web.oidc]` as OidcSettings: every key checked, the three of the client required. From
    the environment (`HITL_WEB_OIDC`), a TOML inline table: `{issuer = "...", ...}`."""
    if isinstance(v, str):
        try:
            v = tomllib.loads(f"oidc = {v}")["oidc"]
        except tomllib.TOMLDecodeError:
            raise ConfigError(key, "expected a TOML inline table, e.g. {issuer = '...', client_id = '...'}") from None
    values = coerce_all(key, v, KEYS)
    for name in _REQUIRED:
        if not values.get(name):
            raise ConfigError(f"{key}.{name}", "required")
    scheme = urlsplit(values["issuer"]).scheme
    if scheme not in ("https", "http"):
        raise ConfigError(f"{key}.issuer", "expected the provider's URL, e.g. https://login.example.com")
    if values.get("identity_claim", "email") not in IDENTITY_CLAIMS:
        raise ConfigError(f"{key}.identity_claim", f"expected one of {', '.join(IDENTITY_CLAIMS)}")
    if "openid" not in values.get("scopes", ("openid",)):
        raise ConfigError(f"{key}.scopes", "must include 'openid'")
    return OidcSettings(**values)


def declared_groups(oidc: OidcSettings | None) -> tuple[str, ...]:
    """The group names `group_map` declares (they exist though no `[groups.NAME]` lists them)."""
    return tuple(dict.fromkeys(oidc.group_map.values())) if oidc is not None else ()


__all__ = ["IDENTITY_CLAIMS", "KEYS", "OidcSettings", "declared_groups", "oidc_table"]
