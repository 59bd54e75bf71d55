"""Who may decide on which channel, and where cards may go, as the operator configured it
(pure, from the settings).

The agent that suspends names `channels` and `approvers`; both only ever narrow what the
operator configured. A channel kind's allowlist is its `approvers` key (`web.approvers`, and each
channel section's), else the identities of that kind that `[people]` names; a kind with neither
has nobody who may decide on it: its cards inform, they carry no buttons.

Cards go only where the operator opened a destination (the keys each channel's
`ChannelSpec.destinations` names, e.g. its chats or recipients): to every agent, or as
`NAME:target` to agent NAME only. The web inbox is always open. Operators, and callers in
the gateway's own process, send anywhere; so do a configured policy's own `escalate_to`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gateway.core import policy as rules
from gateway.core.channels import parse_address
from gateway.core.errors import DestinationNotAllowed, ValidationError
from gateway.core.identity import AGENT, OPERATOR, WEB, Identities, is_group
from gateway.core.models import Policy
from gateway.core.principals import Principal
from gateway.settings import Settings, attribute, destination_entry

Allowlists = Mapping[str, frozenset[str]]
Destinations = Mapping[str, frozenset[str | None]]  # address -> the agent names it is open to (None: every agent)


def allowlists(settings: Settings) -> dict[str, frozenset[str]]:
    """Each channel kind's configured approvers as canonical identities: its `approvers` key,
    else the identities of its kind in `[people]` (empty: nobody decides on that kind). A
    `group:NAME` listed stays in the list (its members by sign-in are known only when they act:
    the Authorizer expands it) besides its configured members of that kind."""
    identities = settings.identities
    raw = {WEB: settings.web.approvers}
    raw |= {kind: tuple(str(i) for i in c.spec.approvers(c.section)) for kind, c in settings.channels.items()}
    out: dict[str, frozenset[str]] = {}
    for kind, ids in raw.items():
        listed: set[str] = set()
        for i in ids:
            if is_group(i):
                listed |= {identities.approver(i, f"{kind}.approvers"), *identities.members_of(i, kind)}
            else:
                listed.add(identities.canonical(f"{kind}:{i}", f"{kind}.approvers"))
        out[kind] = frozenset(listed) or _people_of(identities, kind)
    return out


def _people_of(identities: Identities, kind: str) -> frozenset[str]:
    return frozenset(i for ids in identities.people.values() for i in ids if parse_address(i)[0] == kind)


def undecidable(settings: Settings) -> list[str]:
    """The allowlist keys of the enabled chat channels where nobody may decide (for a warning at
    start): their cards carry no buttons. The web inbox is always on and has its own key."""
    lists = allowlists(settings)
    return [f"{kind}.approvers" for kind in sorted(settings.enabled_channels() - {WEB}) if not lists.get(kind)]


def operators(settings: Settings) -> frozenset[str]:
    """Every configured operator's identity (named ones, and those of `operator_keys`)."""
    return frozenset(p.identity for p, _ in settings.security.principal_keys() if p.is_operator)


def check_reachable(
    channels: Iterable[str],
    approvers: tuple[str, ...],
    requested_by: str | None,
    quorum: int,
    lists: Allowlists,
    identities: Identities,
    known_operators: frozenset[str],
) -> None:
    """A 400 naming `approvers` when the approvers an agent named cannot reach the quorum:
    fewer than `quorum` distinct parties among them (not the requester's) may decide on one of
    the approval's channels (including where it escalates to; the configured allowlists decide
    that) or are configured operators, who decide through the API. An `operator:` approver that
    is no configured operator is refused outright. Naming nobody leaves it to the allowlists and
    to the operators."""
    if not approvers:
        return
    for a in approvers:
        if parse_address(a)[0] == OPERATOR and a not in known_operators:
            raise ValidationError("approvers", f"{a} is not a configured operator (security.operators)")
    party = identities.party
    me = party(requested_by) if requested_by else None
    can = {party(a) for a in approvers if a in known_operators} - {me}
    kinds = sorted({parse_address(c)[0] for c in channels})
    member = identities.in_group  # the configured members: whom a sign-in adds is not known yet
    for kind in kinds:
        allowed = lists.get(kind, frozenset())
        can |= {party(i) for i in rules.deciders(allowed, approvers, requested_by, party, member)}
        if kind == WEB and allowed:  # a group the web sign-in may fill counts as one party
            can |= {a for a in approvers if is_group(a) and a.partition(":")[2] in identities.claimable}
    if len(can) >= max(quorum, 1):
        return
    keys = ", ".join(f"{kind}.approvers" for kind in kinds)
    raise ValidationError(
        "approvers",
        f"only {len(can)} of the approvers named may decide on the approval's channels, and its quorum needs"
        f" {max(quorum, 1)}: they must be listed in {keys} (an agent's approvers only narrow the configured"
        " ones), or be configured operators",
    )


@dataclass(frozen=True, slots=True)
class Opened:
    """The configured destinations: each address (canonical) with the agents it is open to, and
    each kind's keys that list them (for the refusal's words)."""

    addresses: Destinations
    keys: Mapping[str, str]
    policies: Mapping[str, Policy]


def destinations(settings: Settings) -> Opened:
    opened: dict[str, set[str | None]] = {}
    for kind, c in settings.channels.items():
        for key in c.spec.destinations:
            for entry in getattr(c.section, attribute(key)):
                agent, target = destination_entry(entry, c.spec.target)
                opened.setdefault(f"{kind}:{c.spec.target(target)}", set()).add(agent)
    keys = {kind: " or ".join(f"{kind}.{k}" for k in c.spec.destinations) for kind, c in settings.channels.items()}
    return Opened({a: frozenset(agents) for a, agents in opened.items()}, keys, settings.policies)


def check_destinations(channels: Iterable[str], policy: Policy, principal: Principal | None, opened: Opened) -> None:
    """DestinationNotAllowed (400) naming the first channel an agent may not send cards to:
    among its `channels`, and among an `escalate_to` that is not the configured policy's own."""
    if principal is None or principal.is_operator:
        return
    kind, _, name = principal.identity.partition(":")
    agent = name if kind == AGENT else None  # a Principal's name is lower case
    configured = opened.policies.get(policy.name)
    trusted = configured.escalate_to if configured is not None else ()
    asked = [("channels", c) for c in channels]
    asked += [("policy.escalate_to", c) for c in policy.escalate_to if c not in trusted and not is_group(c)]
    for field, address in asked:
        agents = opened.addresses.get(address, frozenset())
        if address != WEB and None not in agents and agent not in agents:
            keys = opened.keys.get(parse_address(address)[0]) or "no key: this kind takes no agent's cards"
            raise DestinationNotAllowed(
                f"{field}: {address!r} is not a destination open to this agent (the operator lists them: {keys})",
                channel=address,
            )


__all__ = [
    "Allowlists",
    "Destinations",
    "Opened",
    "allowlists",
    "check_destinations",
    "check_reachable",
    "destinations",
    "operators",
    "undecidable",
]
