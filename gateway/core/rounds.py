"""Pure rules of quorum rounds: votes count only for identical args.

An approval's current round votes on its current args: the original ones, or the proposal of the
last approver who changed them. A vote that carries other args starts a new round: its args
become the proposal, the votes so far no longer count (they stay in the events) and the vote is
the first of the new round, so everyone who approved before is asked again (their cards are
synced to show the change). A vote without args, or with the current args, is a vote in the
current round. Rejecting needs no args: a reject is a veto whatever the args.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gateway.core.edits import change_list
from gateway.core.events import EventKind
from gateway.core.models import Approval, Outcome, Proposal, Vote
from gateway.core.policy import Transition, already_decided, apply_vote


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
    data = {**t.data, "patch": a.proposal.patch, "changes": change_list(a.args, a.proposal.args)}
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


__all__ = ["change_text", "vote_on"]
