"""Who may decide on which channel, as the operator configured it (pure, from the settings).

The agent that suspends names `channels` and `approvers`; both only ever narrow what the
operator configured. A channel kind's allowlist is its `approvers` key (`web.approvers`, and each
channel section's), else the identities of that kind that `[people]` names; a kind with neither
has nobody who may decide on it: its cards inform, they carry no buttons.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gateway.config import Settings
from gateway.core import policy as rules
from gateway.core.errors import ValidationError
from gateway.core.identity import OPERATOR, WEB, Identities
from gateway.delivery.channels import parse_address

Allowlists = Mapping[str, frozenset[str]]


def allowlists(settings: Settings) -> dict[str, frozenset[str]]:
    """Each channel kind's configured approvers as canonical identities: its `approvers` key,
    else the identities of its kind in `[people]` (empty: nobody decides on that kind)."""
    identities = settings.identities
    raw = {WEB: settings.web.approvers}
    raw |= {kind: tuple(str(i) for i in c.spec.approvers(c.section)) for kind, c in settings.channels.items()}
    out: dict[str, frozenset[str]] = {}
    for kind, ids in raw.items():
        listed = frozenset(identities.canonical(f"{kind}:{i}", f"{kind}.approvers") for i in ids)
        out[kind] = listed or _people_of(identities, kind)
    return out


def _people_of(identities: Identities, kind: str) -> frozenset[str]:
    return frozenset(i for ids in identities.people.values() for i in ids if parse_address(i)[0] == kind)


def undecidable(settings: Settings) -> list[str]:
    """The allowlist keys of the enabled chat channels where nobody may decide (for a warning at
    start): their cards carry no buttons. The web inbox is always on and has its own key."""
    lists = allowlists(settings)
    return [f"{kind}.approvers" for kind in sorted(settings.enabled_channels() - {WEB}) if not lists.get(kind)]


def check_reachable(
    channels: Iterable[str],
    approvers: tuple[str, ...],
    requested_by: str | None,
    lists: Allowlists,
    identities: Identities,
) -> None:
    """A 400 naming `approvers` when the approvers an agent named can decide on none of its
    channels (the configured allowlists do not list them, or only the requester is named). An
    operator named is enough: operators decide through the API. Naming nobody leaves it to the
    allowlists and to the operators."""
    if not approvers or any(parse_address(a)[0] == OPERATOR for a in approvers):
        return
    kinds = sorted({parse_address(c)[0] for c in channels})
    for kind in kinds:
        if rules.deciders(lists.get(kind, frozenset()), approvers, requested_by, identities.party):
            return
    keys = ", ".join(f"{kind}.approvers" for kind in kinds)
    raise ValidationError(
        "approvers",
        f"none of the approvers named may decide on the approval's channels: they must be listed in {keys}"
        " (an agent's approvers only narrow the configured ones), or name an operator",
    )


__all__ = ["Allowlists", "allowlists", "check_reachable", "undecidable"]
