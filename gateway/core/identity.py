"""Canonical identities, and the people who own them.

Every actor is `kind:id`: `requested_by`, `approvers`, who decided or cancelled, every actor
on the record. The kind is a channel kind (`web`, or one a ChannelSpec declares), `agent` or
`operator`: lower case, no whitespace. The id follows its kind's own syntax (`IdSyntax`) and is
folded to one spelling, so that two spellings of one account are one identity; anything else is
refused with a 400 naming the field. Nothing compares free text.

`[people.NAME]` joins one person's identities across kinds. A person is one *party*: a quorum
counts parties, and the requester check covers every identity of the requester's party.

`[groups.NAME]` names a set of approvers (identities, or person names from `[people]`), written
`group:NAME` wherever approvers are named. A group is never an actor: it is expanded when someone
acts (`in_group`), with the groups that person's sign-in claimed (`claimed`) besides the
configured members, so an agent can name a group but never say who is in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from gateway.core.errors import ValidationError

WEB, AGENT, OPERATOR, GROUP = "web", "agent", "operator", "group"
KIND_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
NAME_PATTERN = r"[A-Za-z0-9_.@-]{1,64}"
NAME_RE = re.compile(NAME_PATTERN)
_SHOWN = 80  # characters of a refused value echoed in the error


def _same(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class IdSyntax:
    """The ids of one kind: what the raw id must look like (`pattern`, matched whole, ASCII
    only) and its one canonical spelling (`fold`, e.g. lower case). `hint` tells a person what
    was expected."""

    pattern: str
    hint: str
    fold: Callable[[str], str] = _same
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", re.compile(self.pattern, re.ASCII))

    def canonical(self, ident: str) -> str | None:
        """The canonical id, or None if `ident` is not an id of this kind."""
        if not ident.isascii() or self._compiled.fullmatch(ident) is None:
            return None
        folded = self.fold(ident)
        return folded if self._compiled.fullmatch(folded) else None


# Web user names and principal names: case-insensitive, stored in lower case.
NAMES = IdSyntax(NAME_PATTERN, "1-64 characters of A-Z, a-z, 0-9, _ . @ and - (case-insensitive)", str.lower)
BUILT_IN: Mapping[str, IdSyntax] = {WEB: NAMES, AGENT: NAMES, OPERATOR: NAMES}


def shown(value: str) -> str:
    """A refused value as an error message may echo it: quoted, control characters escaped, cut."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 4] + "...'"


def is_group(value: str) -> bool:
    """Whether an approver names a group (`group:NAME`) rather than an identity."""
    return value.startswith(f"{GROUP}:")


class Identities:
    """The identity kinds this gateway knows, and its people. Pure and immutable."""

    def __init__(
        self,
        kinds: Mapping[str, IdSyntax] = BUILT_IN,
        people: Mapping[str, Iterable[str]] | None = None,
        groups: Mapping[str, Iterable[str]] | None = None,
        claimable: Iterable[str] = (),
    ) -> None:
        self.kinds: Mapping[str, IdSyntax] = dict(kinds)
        owner: dict[str, str] = {}
        members: dict[str, tuple[str, ...]] = {}
        for name, identities in (people or {}).items():
            if not NAME_RE.fullmatch(name):
                raise ValidationError(f"people.{name}", "a person's name is 1-64 characters of A-Z, a-z, 0-9, _ . @ -")
            canon = tuple(dict.fromkeys(self.canonical(i, f"people.{name}") for i in identities))
            for identity in canon:
                if identity in owner:
                    raise ValidationError(f"people.{name}", f"{identity} is already one of people.{owner[identity]}")
                owner[identity] = name
            members[name] = canon
        self._owner = owner
        self.people: Mapping[str, tuple[str, ...]] = members
        self.groups: Mapping[str, frozenset[str]] = {
            name: self._members(name, listed) for name, listed in (groups or {}).items()
        }
        # The groups a sign-in may put people in ([web.oidc]): reachable though no member is listed.
        self.claimable = frozenset(claimable) & frozenset(self.groups)

    def _members(self, name: str, listed: Iterable[str]) -> frozenset[str]:
        """A group's members as parties: a person's name, or a canonical identity."""
        where = f"groups.{name}"
        if not NAME_RE.fullmatch(name):
            raise ValidationError(where, "a group's name is 1-64 characters of A-Z, a-z, 0-9, _ . @ -")
        out = set()
        for i, member in enumerate(listed):
            field_ = f"{where}.members[{i}]"
            if isinstance(member, str) and ":" not in member:
                if member not in self.people:
                    raise ValidationError(field_, f"{shown(member)} is no person ([people.NAME]) nor an identity")
                out.add(member)
            else:
                out.add(self.party(self.canonical(member, field_)))
        return frozenset(out)

    def canonical(self, value: object, field: str) -> str:
        """`value` as a canonical identity, or a ValidationError naming `field`."""
        if not isinstance(value, str):
            raise ValidationError(field, "must be an identity string like 'web:alice'")
        kind, sep, ident = value.partition(":")
        if not sep:
            raise ValidationError(field, f"{shown(value)} is not an identity: write it as kind:id, e.g. 'web:alice'")
        syntax = self.kinds.get(kind)
        if syntax is None:
            known = ", ".join(sorted(self.kinds))
            raise ValidationError(field, f"{shown(kind)} is not an identity kind (lower case, one of {known})")
        canon = syntax.canonical(ident)
        if canon is None:
            raise ValidationError(field, f"{shown(ident)} is not a {kind} id: expected {syntax.hint}")
        return f"{kind}:{canon}"

    def person(self, identity: str) -> str | None:
        """The name of the person `identity` belongs to, if `[people]` names one."""
        return self._owner.get(identity)

    def party(self, identity: str) -> str:
        """Who an identity stands for when counting or comparing people: the person's name
        (no ':' in it), else the identity itself."""
        return self._owner.get(identity, identity)

    def approver(self, value: object, field: str) -> str:
        """An approver as named in a suspend, a rule or a config: a canonical identity, or
        `group:NAME` of a configured group (a ValidationError naming `field` otherwise)."""
        if isinstance(value, str) and value.startswith(f"{GROUP}:"):
            name = value.partition(":")[2]
            if name not in self.groups:
                known = ", ".join(sorted(self.groups)) or "none are configured"
                raise ValidationError(field, f"{shown(value)} is not a configured group ([groups.NAME]: {known})")
            return value
        return self.canonical(value, field)

    def in_group(self, group: str, identity: str, claimed: Collection[str] = ()) -> bool:
        """Whether `identity` (canonical) is a member of `group` (`group:NAME`): listed in its
        config, directly or as its person, or in `claimed` (the group names its sign-in claimed).
        An unknown or empty group has nobody in it."""
        kind, _, name = group.partition(":")
        members = self.groups.get(name) if kind == GROUP else None
        if members is None:
            return False
        return name in claimed or self.party(identity) in members

    def names(self, approvers: Collection[str], identity: str, claimed: Collection[str] = ()) -> bool:
        """Whether `approvers` (identities and groups) name `identity`'s party."""
        me = self.party(identity)
        return any(self.in_group(a, identity, claimed) if is_group(a) else self.party(a) == me for a in approvers)

    def members_of(self, group: str, kind: str) -> frozenset[str]:
        """The configured members of `group` that are identities of `kind` (a person's too)."""
        out: set[str] = set()
        for member in self.groups.get(group.partition(":")[2], frozenset()):
            ids = self.people.get(member) or (member,)
            out |= {i for i in ids if i.partition(":")[0] == kind}
        return frozenset(out)

    def identities_of(self, identity: str) -> tuple[str, ...]:
        """Every identity of the person `identity` belongs to (just itself without one)."""
        name = self._owner.get(identity)
        return self.people[name] if name is not None else (identity,)


__all__ = [
    "AGENT",
    "BUILT_IN",
    "GROUP",
    "KIND_RE",
    "NAMES",
    "NAME_RE",
    "OPERATOR",
    "WEB",
    "IdSyntax",
    "Identities",
    "is_group",
    "shown",
]
