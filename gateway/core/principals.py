"""Principals: who holds an API key. Every key is one principal, an agent or an operator.

An agent suspends, reads and journals only what it created. An operator decides, cancels,
retries, re-posts cards and sees everything. The identity recorded for a principal is
`agent:NAME` or `operator:NAME`; NAME is the table key of `[security.agents]` /
`[security.operators]` in lower case (names are case-insensitive, canonical from the moment the
config is loaded), or, for the older `api_keys` / `operator_keys` lists, `key-` and a hash
prefix of the key (stable across reordering, and never the key itself).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from gateway.core.errors import ConfigError, ValidationError

Kind = Literal["agent", "operator"]
NAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
NAME_RULE = "1-64 characters of A-Z, a-z, 0-9, _ . @ and -"
# The namespace of the run ids and idempotency keys that no agent created: an operator's, an
# in-process caller's, and those from before principals existed.
NO_AGENT = ""
V = TypeVar("V")


def namespace_of(creator: str | None) -> str:
    """The namespace of run ids and idempotency keys a record created by `creator` (an
    identity, or None) lives in: each agent has its own (its identity), everyone else shares
    NO_AGENT. Another agent's run id or key is simply a different one."""
    return creator if creator is not None and creator.startswith("agent:") else NO_AGENT


def agent_namespace(value: str, field: str = "agent") -> str:
    """The namespace an agent's name designates: NAME or `agent:NAME` is that agent's (names are
    case-insensitive), empty is NO_AGENT; anything else a 400 naming `field`."""
    if value == NO_AGENT:
        return NO_AGENT
    name = value.removeprefix("agent:")
    if not NAME_RE.match(name):
        raise ValidationError(field, f"an agent name is {NAME_RULE} (empty: no agent)")
    return f"agent:{name.lower()}"


def canonical_names(key: str, named: Mapping[str, V]) -> dict[str, V]:
    """A principals table (`security.agents`, `security.operators`) keyed by canonical name:
    lower case, as identities and namespaces are. Two names that differ only in case would be
    one principal: a ConfigError naming the second one's key."""
    out: dict[str, V] = {}
    spelled: dict[str, str] = {}
    for name, value in named.items():
        canon = name.lower()
        if canon in spelled:
            raise ConfigError(
                f"{key}.{name}", f"the same name as {key}.{spelled[canon]}: principal names are case-insensitive"
            )
        spelled[canon] = name
        out[canon] = value
    return out


@dataclass(frozen=True, slots=True)
class Principal:
    kind: Kind
    name: str

    def __post_init__(self) -> None:
        # names are case-insensitive: one spelling for the identity, the namespace, `?agent=` and
        # destinations, however the principal was built (the config folds them too, and refuses
        # two spellings of one name)
        object.__setattr__(self, "name", self.name.lower())

    @property
    def identity(self) -> str:
        """The canonical identity recorded for this principal (`agent:NAME`, `operator:NAME`)."""
        return f"{self.kind}:{self.name}"

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    @property
    def namespace(self) -> str:
        """Where this principal's run ids and idempotency keys live (`namespace_of`)."""
        return namespace_of(self.identity)

    def owns(self, owner: str | None) -> bool:
        """Whether a record created by `owner` (an identity) is this principal's to see: an
        operator sees everything, an agent only what it created itself."""
        return self.is_operator or owner == self.identity


def derived_name(key: str) -> str:
    """The principal name of a key listed in `api_keys` / `operator_keys`: a 48-bit hash prefix,
    so that the name stays the same when the list is reordered and reveals nothing usable."""
    return "key-" + hashlib.sha256(b"hitl-gateway principal\x00" + key.encode()).hexdigest()[:12]


def principal_entries(
    agents: Mapping[str, str], operators: Mapping[str, str], api_keys: Sequence[str], operator_keys: Sequence[str]
) -> list[tuple[Principal, str]]:
    """Every key with its principal: the named tables, then the older lists (one principal per
    key, named by a hash prefix of the key)."""
    return [
        *((Principal("agent", n), k) for n, k in agents.items()),
        *((Principal("operator", n), k) for n, k in operators.items()),
        *((Principal("agent", derived_name(k)), k) for k in api_keys),
        *((Principal("operator", derived_name(k)), k) for k in operator_keys),
    ]


def check_principals(
    agents: Mapping[str, str], operators: Mapping[str, str], api_keys: Sequence[str], operator_keys: Sequence[str]
) -> None:
    """Every key is one principal: long enough, used once, with a name that fits an identity.
    ConfigError names the key (`security.agents.NAME`, `security.api_keys[0]`...)."""
    for table, named in (("agents", agents), ("operators", operators)):
        for name, key in named.items():
            if not NAME_RE.match(name):
                raise ConfigError(f"security.{table}.{name}", f"a principal name is {NAME_RULE}")
            if len(key) < 16:
                raise ConfigError(f"security.{table}.{name}", "the key must be at least 16 characters")
    for listed, keys in (("api_keys", api_keys), ("operator_keys", operator_keys)):
        for i, key in enumerate(keys):
            if len(key) < 16:
                raise ConfigError(f"security.{listed}[{i}]", "must be at least 16 characters")
    seen_keys: set[str] = set()
    seen_ids: set[str] = set()
    for principal, key in principal_entries(agents, operators, api_keys, operator_keys):
        if key in seen_keys:
            raise ConfigError(f"security.{principal.kind}s", "a key is given twice: every key is one principal")
        if principal.identity in seen_ids:
            raise ConfigError(f"security.{principal.kind}s.{principal.name}", "this principal name is taken")
        seen_keys.add(key)
        seen_ids.add(principal.identity)


class Principals:
    """Maps a bearer credential to its principal in constant time over every key."""

    def __init__(self, entries: Iterable[tuple[Principal, str]]) -> None:
        self._entries: Sequence[tuple[Principal, bytes]] = tuple((p, k.encode()) for p, k in entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def has_operators(self) -> bool:
        return any(p.is_operator for p, _ in self._entries)

    def all(self) -> list[Principal]:
        return [p for p, _ in self._entries]

    def resolve(self, credential: bytes) -> Principal | None:
        found = None
        for principal, key in self._entries:  # no early exit: the time does not tell which key
            if hmac.compare_digest(credential, key):
                found = principal
        return found


__all__ = [
    "NAME_RE",
    "NAME_RULE",
    "NO_AGENT",
    "Kind",
    "Principal",
    "Principals",
    "agent_namespace",
    "canonical_names",
    "check_principals",
    "derived_name",
    "namespace_of",
    "principal_entries",
]
