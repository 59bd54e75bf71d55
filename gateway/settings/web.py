"""`[web]`: the web inbox's users and how long their sign-ins last."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from gateway.core.errors import ConfigError
from gateway.core.identity import NAMES
from gateway.settings.coerce import Coerce, duration, integer, strings, table
from gateway.settings.oidc import OidcSettings, oidc_table

_SCRYPT_RE = re.compile(r"^scrypt\$\d+\$\d+\$\d+\$[0-9a-f]{16,}\$[0-9a-f]{32,}$")
# A sign-in link works once by a de-duplication mark, which housekeeping prunes after 48 hours
# (gateway.sla.housekeeping.INBOUND_KEEP): a link must be dead well before its mark is gone.
LOGIN_LINK_LONGEST = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class WebSettings:
    """Web inbox users: `approvers` may decide, `viewers` may only look. `passwords` maps a
    user name to its scrypt hash (`hitl-gateway web hash-password`); a user without one signs
    in with a one-time link (`hitl-gateway web login-link NAME`)."""

    approvers: tuple[str, ...] = ()
    viewers: tuple[str, ...] = ()
    passwords: Mapping[str, str] = field(default_factory=dict)
    session_max_age: timedelta = timedelta(hours=12)
    login_link_max_age: timedelta = timedelta(minutes=15)
    # the live refresh streams (/live) one user holds in one process; a new one ends the oldest
    live_streams_per_user: int = 8
    oidc: OidcSettings | None = None  # [web.oidc]: sign in through an OpenID provider

    def role(self, name: str, member: Callable[[str], bool] | None = None) -> str | None:
        """`approver`, `viewer` or None: listed by name, or (with `member(group:NAME)`, whether
        the user is in that group) through a `group:NAME` listed."""

        def listed(names: tuple[str, ...]) -> bool:
            return name in names or (member is not None and any(member(n) for n in names if n.startswith("group:")))

        return "approver" if listed(self.approvers) else "viewer" if listed(self.viewers) else None

    @property
    def by_group(self) -> bool:
        """Whether a role comes through a group (then who is a user is not a list of names)."""
        return any(n.startswith("group:") for n in (*self.approvers, *self.viewers))


KEYS: dict[str, Coerce] = {
    "approvers": strings,
    "viewers": strings,
    "passwords": table,
    "session_max_age": duration,
    "login_link_max_age": duration,
    "live_streams_per_user": integer,
    "oidc": oidc_table,
}


def check_web(web: WebSettings) -> None:
    if web.login_link_max_age > LOGIN_LINK_LONGEST:
        why = "at most 24h: a sign-in link works once only while its use is remembered"
        raise ConfigError("web.login_link_max_age", why)
    if web.live_streams_per_user < 1:
        raise ConfigError("web.live_streams_per_user", "at least 1: each open page holds one stream")
    seen: dict[str, str] = {}
    for key in ("approvers", "viewers"):
        for i, name in enumerate(getattr(web, key)):
            if name.startswith("group:"):
                continue  # checked against [groups] with the other approvers (check_groups)
            if NAMES.canonical(name) is None:
                raise ConfigError(f"web.{key}[{i}]", "1-64 characters of A-Z, a-z, 0-9, _ . @ and -")
            # web names are case-insensitive identities (web:alice): two spellings are one user
            folded = name.lower()
            if seen.get(folded, name) != name:
                raise ConfigError(f"web.{key}[{i}]", f"{name!r} and {seen[folded]!r} are the same web user")
            seen[folded] = name
    for name, hashed in web.passwords.items():
        if web.role(name) is None and not web.by_group:  # else a group may list them
            raise ConfigError(f"web.passwords.{name}", "not listed in web.approvers or web.viewers")
        if not _SCRYPT_RE.match(hashed):
            raise ConfigError(f"web.passwords.{name}", "expected a hash from `hitl-gateway web hash-password`")


__all__ = ["KEYS", "WebSettings", "check_web"]
