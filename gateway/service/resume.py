"""The resume side of an approval: the tokens its agent and its workers hold, what a token
opens (the run's journal, the approval), the document a worker resumes with, and a decision by
token. Every token is signed (`gateway.core.tokens`), time-bound and bound to one run and args."""

from __future__ import annotations

from typing import Any

from gateway.core import disclosure
from gateway.core.clock import Clock, iso
from gateway.core.errors import Forbidden, InvalidToken
from gateway.core.models import Approval, Outcome
from gateway.core.sealing import Sealer
from gateway.core.tokens import RESUME, TokenSigner
from gateway.service import edits as service_edits
from gateway.service.commands import Authority, CastVote
from gateway.service.decisions import Decisions
from gateway.settings import Settings
from gateway.store import Store

TOKEN_ACTOR = "token"  # who decided by holding the resume token (`decide_by_token`): no identity


class Resumes:
    def __init__(
        self, settings: Settings, store: Store, clock: Clock, signer: TokenSigner, sealer: Sealer, decisions: Decisions
    ) -> None:
        self.settings, self.store, self.clock, self.signer = settings, store, clock, signer
        self.sealer, self.decisions = sealer, decisions

    def resume_token(self, approval: Approval) -> str:
        """Deterministic for one approval and key set, bound to its id, run and args, and
        naming its run's namespace (`n`: what opens the run's journal, see `journal_namespace`)."""
        if approval.deadline is not None:
            expires = approval.deadline + self.settings.security.token_grace
        else:
            expires = approval.created_at + self.settings.security.token_max_age
        payload = {"a": approval.id, "r": approval.run_id, "h": approval.args_hash[:16], "n": approval.namespace}
        return self.signer.sign(RESUME, payload, expires)

    def reply_token(self, approval: Approval) -> str:
        """The token of a suspend's reply: the same on each replay while the approval waits; once
        decided, a fresh one as a worker's, so that a run which learns its decision on a replay
        (an agent restarted weeks later) is not refused for the first token's age."""
        return self.worker_token(approval) if approval.status.final else self.resume_token(approval)

    def worker_token(self, approval: Approval) -> str:
        """A fresh token for a worker run (valid for the grace period from now), bound to the
        approved args (the edited ones, when an approver changed them)."""
        payload = {"a": approval.id, "r": approval.run_id, "h": approval.run_hash[:16], "n": approval.namespace}
        return self.signer.sign(RESUME, payload, self.clock.now() + self.settings.security.token_grace)

    async def journal_namespace(self, token: str, run_id: str) -> str:
        """The namespace of the run `run_id` whose journal `token` opens; InvalidToken (401) if
        forged or another run's, TokenExpired (410) if stale.

        A token that names its namespace (`n`, signed with the rest) is checked without reading
        its approval: the signature, the expiry and its run `r` are all it takes, and it opens
        that run in that namespace only, so neither another run nor another agent's run of the
        same id. What changes: it keeps opening its run's journal until it expires even if the
        approval was purged meanwhile, or if its args hash no longer matched (an edit keeps both
        hashes valid anyway). Acceptable: it was signed for exactly that run, it is time-bound
        (a deadline plus grace, or a worker's grace), and the journal is the run's, not the
        approval's; the rehydration and a decision by token still read the approval. A token
        issued before `n` existed falls back to that read."""
        data = self.signer.verify(RESUME, token, self.clock.now())
        namespace = data.get("n")
        if isinstance(namespace, str):
            if data.get("r") != run_id:
                raise InvalidToken("the resume token belongs to another run")
            return namespace
        approval = await self._approval_for(data)
        if approval.run_id != run_id:
            raise InvalidToken("the resume token belongs to another run")
        return approval.namespace

    async def approval_for_token(self, token: str) -> Approval:
        return await self._approval_for(self.signer.verify(RESUME, token, self.clock.now()))

    async def _approval_for(self, data: dict[str, Any]) -> Approval:
        """The approval of a verified token's payload, if it still matches it."""
        approval = await self.store.get_approval(str(data.get("a")))
        # Bound to the args asked for (the suspend's token) or to the approved ones (a worker's).
        hashes = (approval.args_hash[:16], approval.run_hash[:16]) if approval else ()
        if approval is None or approval.run_id != data.get("r") or data.get("h") not in hashes:
            raise InvalidToken("the token does not match an approval")
        return approval

    async def rehydrate(self, token: str) -> dict[str, Any]:
        """Everything a worker needs to resume the run."""
        approval = await self.approval_for_token(token)
        return self.rehydration_document(approval)

    def raw_args_state(self, approval: Approval) -> tuple[dict[str, Any], Any]:
        """The unredacted args and state (decrypted); only for resume-token holders and workers."""
        raw = service_edits.raw_sealed(self.sealer, approval)
        return raw["args"], raw["state"]

    def rehydration_document(self, approval: Approval) -> dict[str, Any]:
        """What a worker resumes with: `args` are the approved args (what must run), raw;
        `original_args` what the agent asked for and `patch` the RFC 6902 change between them;
        `args_hash` binds them (the decision carries the same three, raw, for the SDK)."""
        raw = service_edits.raw_sealed(self.sealer, approval)  # opened once: each opening decrypts
        approved, original, patch = service_edits.approved_raw(self.sealer, approval, raw)
        state = raw["state"]
        decision = approval.decision.to_api() if approval.decision else None
        if decision is not None and decision.get("args") is not None:
            decision |= {"args": approved, "original_args": original, "patch": patch}
        # A token holder and a worker are the agent's side: shown what an agent's key is
        # (gateway.core.disclosure), never the operators' rule errors.
        return {
            "approval": disclosure.approval(approval.to_api()),
            "status": approval.status.value,
            "decision": disclosure.decision(decision),
            "run_id": approval.run_id,
            "step": approval.step,
            "args": approved,
            "original_args": original,
            "patch": patch,
            "args_hash": approval.run_hash,
            "state": state,
            "deadline": iso(approval.deadline),
        }

    async def decide_by_token(self, token: str, outcome: Outcome, comment: str | None) -> Approval:
        if not self.settings.security.token_decisions:
            raise Forbidden("deciding by token is disabled (security.token_decisions = false)")
        approval = await self.approval_for_token(token)
        cmd = CastVote(approval.id, outcome, TOKEN_ACTOR, Authority.TOKEN, comment, channel=TOKEN_ACTOR)
        return (await self.decisions.cast(cmd, current=approval)).approval
