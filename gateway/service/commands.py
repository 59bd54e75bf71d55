"""The decision commands: frozen inputs, one per use case, built by whoever received the request
(an API handler, a press, the CLI, the scheduler) and executed by `gateway.service.decisions`.

`Authority` says how the command's actor came to be trusted, and so which check it gets; it is
the only thing that switches authorization (`gateway.service.authority.Authorizer.authorize`),
so a new path to a decision picks one of these instead of adding a flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from gateway.core.models import Outcome


class Authority(StrEnum):
    APPROVER = "approver"  # someone on a channel: on its configured allowlist, narrowed by the approval
    OPERATOR = "operator"  # an operator's key: may decide where the approval names no approvers, never as its requester
    TOKEN = "token"  # holds the resume token: the token is the authority, no identity is checked
    POLICY = "policy"  # the SLA clock (a timeout, an escalation)


@dataclass(frozen=True, slots=True)
class CastVote:
    """Approve or reject, by one person (or a token). `args`: the approver's edited args (approve
    with changes). `seen`: the round tag of what the voter saw (gateway.core.rounds.tag, or
    ORIGINAL); an approve drawn for another round's args is refused, naming `seen_field`. `name`:
    how the platform shows the voter, for cards. `on_behalf_of`: an operator's note of whom it
    acted for, recorded, never taken as the approver. `grant`: a standing grant the approve adds
    ("1h", "run": one of the policy's `grants`; gateway.service.grants). `marks`: the inbound
    de-duplication marks of the press it comes from, committed with what the vote writes."""

    approval_id: str
    outcome: Outcome
    actor: str
    authority: Authority = Authority.APPROVER
    comment: str | None = None
    channel: str | None = None
    name: str | None = None
    on_behalf_of: str | None = None
    args: dict[str, Any] | None = None
    seen: str | None = None
    seen_field: str = "round"
    grant: str | None = None
    marks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Cancel:
    approval_id: str
    by: str
    reason: str | None = None
    on_behalf_of: str | None = None
    authority: Authority = Authority.OPERATOR


@dataclass(frozen=True, slots=True)
class Extend:
    """Push the deadline back by one of the policy's `extend` durations. `marks`: the inbound
    de-duplication marks of the press it comes from, committed with the extension (as a vote's).
    `seen`: the extensions the asker's page showed (gateway.core.extend.extend)."""

    approval_id: str
    duration: timedelta
    actor: str
    authority: Authority = Authority.APPROVER
    channel: str | None = None
    marks: tuple[str, ...] = ()
    seen: int | None = None


@dataclass(frozen=True, slots=True)
class AddComment:
    """The person who decided explains it afterwards (the reason asked for after a Reject press)."""

    approval_id: str
    actor: str
    comment: str
    channel: str | None = None


@dataclass(frozen=True, slots=True)
class Expire:
    """The scheduler's: apply the timeout, escalation or reminder due at `now`."""

    approval_id: str
    now: datetime


__all__ = ["AddComment", "Authority", "Cancel", "CastVote", "Expire", "Extend"]
