"""Principals: who holds an API key. Every key is one principal, an agent or an operator.

An agent suspends, reads and journals only what it created. An operator decides, cancels,
retries, re-posts cards and sees everything. The identity recorded for a principal is
`agent:NAME` or `operator:NAME`; NAME is the table key of `[security.agents]` /
`[security.operators]`, or, for the older `api_keys` / `operator_keys` lists, `key-` and a hash
prefix of the key (stable across reordering, and never the key itself).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["agent", "operator"]
NAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
NAME_RULE = "1-64 characters of A-Z, a-z, 0-9, _ . @ and -"


@dataclass(frozen=True, slots=True)
class Principal:
    kind: Kind
    name: str

    @property
    def identity(self) -> str:
        """The canonical identity recorded for this principal (`agent:NAME`, `operator:NAME`)."""
        return f"{self.kind}:{self.name}"

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    def owns(self, owner: str | None) -> bool:
        """Whether a record created by `owner` (an identity) is this principal's to see: an
        operator sees everything, an agent only what it created itself."""
        return self.is_operator or owner == self.identity


def derived_name(key: str) -> str:
    """The principal name of a key listed in `api_keys` / `operator_keys`: a 48-bit hash prefix,
    so that the name stays the same when the list is reordered and reveals nothing usable."""
    return "key-" + hashlib.sha256(b"hitl-gateway principal\x00" + key.encode()).hexdigest()[:12]


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


__all__ = ["NAME_RE", "NAME_RULE", "Kind", "Principal", "Principals", "derived_name"]
