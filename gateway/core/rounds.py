"""Pure rules of quorum rounds: votes count only for identical args.

An approval's current round votes on its current args: the original ones, or the proposal of the
last approver who changed them. A vote that carries other args starts a new round: its args
become the proposal, the votes so far no longer count (they stay in the events) and the vote is
the first of the new round, so everyone who approved before is asked again (their cards are
synced to show the change). A vote without args, or with the current args, is a vote in the
current round. Rejecting needs no args: a reject is a veto whatever the args.

An approve is bound to the round it was drawn for: every card's approve button, one-time link and
form carries `tag(approval)`, a short keyed MAC of the approval id and the hash of the args the
round votes on, and the vote use case refuses an approve whose tag is not the current round's
(`saw_current`: StaleRound, nothing recorded). Why a tag and not `Proposal.round`: an edit back
to the original args ends the proposal, so round numbers repeat (round 1 on args Y, back to round
0, round 1 again on args Z) while the hash of the args cannot; and why keyed: a plain hash of the
raw args on a card would let anyone who sees the button guess redacted values offline. A button
drawn before tags existed carries none: it is taken as drawn for the original args (`ORIGINAL`),
so after an edit it is refused too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from gateway.core.edits import change_list
from gateway.core.events import EventKind
from gateway.core.models import Approval, Outcome, Proposal, Vote
from gateway.core.policy import Transition, already_decided, apply_vote


class Macs(Protocol):
    """Short MACs, as gateway.core.tokens.TokenSigner makes and checks them."""

    def mac(self, purpose: str, message: str, length: int = 10) -> str: ...

    def check_mac(self, purpose: str, message: str, mac: str, length: int = 10) -> bool: ...


TAG_PURPOSE = "hitl.round.v1"
TAG_LENGTH = 10  # hex characters = 40 bits: small enough for a 64-byte button payload
ORIGINAL = "0"  # what a card drawn before round tags saw: the original args (never a real tag)


def tag_of(signer: Macs, approval_id: str, args_hash: str) -> str:
    """The round tag of the round that votes on the args hashed `args_hash`."""
    return signer.mac(TAG_PURPOSE, f"{approval_id}|{args_hash}", TAG_LENGTH)


def tag(signer: Macs, approval: Approval) -> str:
    """The tag a card's approve button (link, form) carries: the round it was drawn for."""
    return tag_of(signer, approval.id, approval.current_hash)


def saw_current(signer: Macs, approval: Approval, seen: str) -> bool:
    """Whether `seen` (a tag, or ORIGINAL) names the args the current round votes on. Checked
    against every key of the signer, so a card drawn before a key rotation stays valid."""
    if seen == ORIGINAL:
        return approval.current_hash == approval.args_hash
    return signer.check_mac(TAG_PURPOSE, f"{approval.id}|{approval.current_hash}", seen, TAG_LENGTH)


def round_number(approval: Approval) -> int:
    return approval.proposal.round if approval.proposal is not None else 0


def vote_on(approval: Approval, vote: Vote, proposal: Proposal | None) -> Transition:
    """`vote` on `approval`; `proposal` is the voter's edited args (None: the current ones).
    A proposal whose args hash is the current one is the current round's."""
    if approval.status.final:
        raise already_decided(approval)
    if proposal is None or proposal.args_hash == approval.current_hash:
        return _with_edit(apply_vote(approval, vote))
    back = proposal.args_hash == approval.args_hash  # edited back to what the agent asked for
    fresh = approval.evolve(proposal=None if back else proposal, votes=())
    transition = _with_edit(apply_vote(fresh, vote))
    changes = change_list(approval.current_args, fresh.current_args)
    data: dict[str, Any] = {
        **transition.data,
        "round": proposal.round,
        "patch": proposal.patch,
        "changes": changes,
        "reset_votes": sum(1 for v in approval.votes if v.outcome is Outcome.APPROVE),
    }
    if transition.final:
        return replace(transition, data=data | {"edited": True})
    new = transition.approval.evolve(version=approval.version + 1)
    return Transition(new, EventKind.EDITED, False, data)


def _with_edit(t: Transition) -> Transition:
    """An approval decided on edited args: its decision carries them, the original args and the
    patch (all redacted: the raw ones are sealed, for the worker)."""
    a, d = t.approval, t.approval.decision
    if not t.final or d is None or a.proposal is None or d.outcome is not Outcome.APPROVE:
        return t
    decision = replace(d, args=a.proposal.args, original_args=a.args, patch=a.proposal.patch)
    # the raw edited args' hash: what the approvals row's proposal must still hold (audit verify)
    data = {**t.data, "patch": a.proposal.patch, "changes": change_list(a.args, a.proposal.args)}
    data["args_hash"] = a.proposal.args_hash
    return replace(t, approval=a.evolve(decision=decision), data=data)


def _plain(identity: str, shown: str) -> str:
    return shown


def change_text(
    approval: Approval, who: Callable[[str, str], str] = _plain, esc: Callable[[str], str] = str
) -> str | None:
    """'approved with changes by Alice: amount 4200 → 3900', 'changes proposed by Alice: …'
    while the round waits for its quorum, or None when nothing was changed. A channel passes
    `who(identity, shown_as)` to name people its way and `esc` to escape the values."""
    p = approval.proposal
    if p is None:
        return None
    changes = esc(change_list(approval.args, p.args))
    editor = who(p.by, p.shown_as)
    d = approval.decision
    if d is not None and d.outcome is Outcome.APPROVE and d.args is not None:
        if d.decided_by == p.by:
            return f"approved with changes by {editor}: {changes}"
        return f"approved by {who(d.decided_by, d.shown_as)} with changes by {editor}: {changes}"
    if approval.status.final:
        return f"changes proposed by {editor}: {changes}"
    return f"changes proposed by {editor}: {changes} (votes restart on the changed args)"


__all__ = ["ORIGINAL", "change_text", "round_number", "saw_current", "tag", "tag_of", "vote_on"]
