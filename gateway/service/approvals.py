"""Use cases: suspend, decide, cancel, expire, remind (rehydrate: gateway.service.resume).

Handlers, the scheduler, the worker and the outbox are thin shells around this class. Each use
case reads, asks the pure `policy` module what happens, and writes the result in one
compare-and-set transaction together with its events, card deliveries and resume job.
"""

from __future__ import annotations

import base64
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from gateway.core import policy as rules
from gateway.core import traces
from gateway.core.admission import Gate
from gateway.core.channels import Channel, check_address, parse_address, posts_inline, web_card_ref
from gateway.core.clock import Clock
from gateway.core.depth import MAX_DEPTH, text_too_deep
from gateway.core.errors import (
    AlreadyDecided,
    IdempotencyConflict,
    NotAnApprover,
    NotFound,
    RequesterCannotDecide,
    UnknownWorker,
    ValidationError,
)
from gateway.core.events import EventKind
from gateway.core.grants import Grant
from gateway.core.identity import is_group
from gateway.core.keys import args_hash, canonical_json, idempotency_key
from gateway.core.models import (
    Approval,
    EditTerms,
    NewEvent,
    NewOutbox,
    OutboxKind,
    Outcome,
    Policy,
    Source,
    Status,
)
from gateway.core.observers import Observer, Observers
from gateway.core.principals import Principal
from gateway.core.redact import Redactor
from gateway.core.rules import NO_COUNTERS, Counters, RuleResult
from gateway.core.rules import evaluate as evaluate_rules
from gateway.core.sealing import Sealer
from gateway.core.shown import audit_facts, card_posted
from gateway.core.tokens import TokenSigner
from gateway.core.traces import TraceContext, Tracer
from gateway.service import edits as service_edits
from gateway.service import grants as service_grants
from gateway.service import routing, rulings
from gateway.service.authority import Authorizer
from gateway.service.commands import AddComment, Authority, Cancel, CastVote, Expire, Extend
from gateway.service.commit import Committer, Done, Step
from gateway.service.decisions import DENIED_KEPT, Decisions
from gateway.service.events import Announcer
from gateway.service.policies import PolicyValue, resolve_policy, settable
from gateway.service.replay import check_replay
from gateway.service.resume import Resumes
from gateway.settings import Settings
from gateway.store import Build, Creation, GrantUnavailable, NewJob, Store, TransitionWrite

log = logging.getLogger("gateway.service")


def new_id() -> str:
    """16 lowercase base32 characters (80 random bits): short enough for callback_data."""
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


@dataclass(frozen=True, slots=True)
class SuspendRequest:
    run_id: str
    step: str
    title: str
    summary: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    state: Any = None
    channels: tuple[str, ...] = ("web",)
    approvers: tuple[str, ...] = ()
    policy: PolicyValue = None  # a name, an inline policy (object or Policy), or a name with choices
    worker: str | None = None
    idempotency_key: str | None = None
    requested_by: str | None = None
    deadline: datetime | None = None  # the timeout as an instant, if the policy lets the agent set it
    args_schema: dict[str, Any] | None = None  # JSON Schema 2020-12 the args (and edits) must validate
    editable: bool | list[str] | None = None  # true, or the top-level args an approver may change
    code_version: str | None = None  # the agent code suspending (a worker's `accepts` globs must match it)
    context: dict[str, Any] | None = None  # what the agent says about the call, for the rules: untrusted
    trace: TraceContext | None = None  # the agent's W3C trace context (a malformed one was dropped)


class Service:
    """The application's facade: suspend, the reads, the SLA clock's transitions; the decisions
    are `self.decisions` (gateway.service.decisions), reached through the commands, and the
    tokens and the rehydration `self.resumes` (gateway.service.resume)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        clock: Clock,
        signer: TokenSigner,
        observer: Observer | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.settings, self.store, self.clock, self.signer = settings, store, clock, signer
        self.tracer = tracer or Tracer()  # the suspend's span (the runtime's: OpenTelemetry when installed)
        # Told every commit (the runtime wires the loops' wake-ups and the metrics to it).
        self.observer: Observer = observer or Observers()
        self.redactor = Redactor.build(defaults=settings.redaction.defaults, patterns=settings.redaction.patterns)
        self.sealer = Sealer(settings.security.secret_keys)
        # settings are frozen: computed once, not per suspend or press
        self._enabled = settings.enabled_channels()
        self._targets = {kind: c.spec.target for kind, c in settings.channels.items()}
        self.identities = settings.identities
        self._allowlists = routing.allowlists(settings)
        self._operators = routing.operators(settings)
        self._destinations = routing.destinations(settings)
        self.authorizer = Authorizer(self.identities, self._allowlists, store, clock, settings.web.session_max_age)
        # The webhooks' outbound events, written with each transition (None: no webhook configured).
        self.announcer = Announcer(settings.events, settings.server.public_url.rstrip("/"))
        self.committer = Committer(store, clock, self.observer, self.announcer if settings.events.webhooks else None)
        self.decisions = Decisions(self.committer, self.authorizer, store, clock, self.redactor, self.sealer, signer)
        self.grants = service_grants.Grants(store, clock, self.identities)
        self.delegations = self.decisions.delegations  # who decides for whom (gateway.service.delegations)
        # The resume side: tokens, what they open, the worker's document (gateway.service.resume).
        self.resumes = Resumes(settings, store, clock, signer, self.sealer, self.decisions)
        # Standing grants decide suspends only while a configured policy offers them: no lookup otherwise.
        self._grants_on = any(p.grants for p in settings.policies.values())
        # The channels by kind (the Runtime fills it): the web inbox's cards are posted inline.
        self.channels: Mapping[str, Channel] = {}
        # Set by the Runtime: a suspend waits (bounded) while decided approvals' jobs wait to launch.
        self.gate: Gate | None = None

    # ---------------------------------------------------------------- suspend
    def resolve_policy(
        self,
        value: PolicyValue,
        deadline: datetime | None = None,
        principal: Principal | None = None,
        now: datetime | None = None,
    ) -> Policy:
        """The policy a suspend gets (see gateway.service.policies): PolicyNotAllowed (403) when
        the caller may not choose it. `now` is the suspend's instant (a deadline lands on it)."""
        return resolve_policy(self.settings, value, deadline=deadline, principal=principal, now=now or self.clock.now())

    def _validate(
        self, req: SuspendRequest, principal: Principal | None, now: datetime, ruled: RuleResult | None = None
    ) -> _Checked:
        """The request's policy, addresses and identities in canonical form; or a 400 (403 for a
        policy the caller may not choose). `ruled`: an `ask` rule's routing, already applied to
        `req`: its policy and channels are the operator's, so the agent's limits do not apply."""
        targets, enabled = self._targets, self._enabled
        channels = tuple(dict.fromkeys([check_address(a, targets, enabled) for a in req.channels]))
        if req.worker is not None and req.worker not in self.settings.workers:
            raise UnknownWorker(f"worker: unknown worker {req.worker!r}", worker=req.worker)
        chooser = None if ruled is not None and ruled.policy else principal
        policy = self.resolve_policy(req.policy, req.deadline, chooser, now)
        if policy.escalate_to:
            escalate = tuple(
                self.identities.approver(a, "policy.escalate_to")
                if is_group(a)
                else check_address(a, targets, enabled, field="policy.escalate_to")
                for a in policy.escalate_to
            )
            if escalate != policy.escalate_to:
                policy = replace(policy, escalate_to=tuple(dict.fromkeys(escalate)))
        canonical = self.identities.canonical
        approvers: tuple[str, ...] = ()
        requested_by = None if req.requested_by is None else canonical(req.requested_by, "requested_by")
        if req.approvers:
            named = [self.identities.approver(a, f"approvers[{i}]") for i, a in enumerate(req.approvers)]
            approvers = tuple(dict.fromkeys(named))
            parties = len({self.identities.party(a) for a in approvers})
            if policy.quorum > parties and not any(map(is_group, approvers)):  # a group: check_reachable counts
                raise ValidationError(
                    "policy.quorum", f"needs {policy.quorum} distinct approvers but only {parties} are named"
                )
        if ruled is None or not ruled.channels:
            routing.check_destinations(channels, policy, principal, self._destinations)
        every = (*channels, *(a for a in policy.escalate_to if not is_group(a)))
        routing.check_reachable(
            every, approvers, requested_by, policy.quorum, self._allowlists, self.identities, self._operators
        )
        return _Checked(policy, channels, approvers, requested_by)

    async def suspend(self, req: SuspendRequest, principal: Principal | None = None) -> tuple[Approval, bool]:
        """Create the approval (idempotent by key, per principal) with its cards queued in the
        same commit. Run ids and keys are the agent's own (`Approval.namespace`): another
        agent's are simply different ones. The rules (gateway.service.rulings) run here, before
        any card: they may decide at once, or route the cards; with budgets, inside the
        transaction that creates the approval, so two suspends cannot both slip under one.

        In a span under the agent's trace context (`req.trace`; none: a new trace), whose own
        context the approval keeps for the spans of its cards, decision and job."""
        agent = principal.identity if principal is not None else None
        attrs = {traces.RUN_ID: req.run_id, traces.TOOL: req.step} | ({traces.AGENT: agent} if agent else {})
        with self.tracer.span(traces.SUSPEND, req.trace, attrs) as span:
            stored, created = await self._suspend(req, principal, span.context)
            span.set(traces.APPROVAL_ID, stored.id)
            span.set("hitl.status", stored.status.value)
            span.set("hitl.created", created)
            return stored, created

    async def _suspend(
        self, req: SuspendRequest, principal: Principal | None, trace: TraceContext | None
    ) -> tuple[Approval, bool]:
        if self.gate is not None:
            await self.gate.admit()
        now = self.clock.now()
        checked = self._validate(req, principal, now)
        terms = await service_edits.parse_terms(req.args_schema, req.editable, req.args)  # off the loop
        encoded, state = _encoded(req)  # once, for the key, the hash and the sealed copy
        key = req.idempotency_key or idempotency_key(req.run_id, req.step, req.args, encoded=encoded)
        agent = principal.identity if principal is not None else None  # also names the run's namespace
        approval = self._approval(req, checked, terms, encoded, state, key, agent, now, trace)
        ruleset = self.settings.rules
        made: Creation | None = None
        grant = await self._covering(req, approval, now) if self._grants_on else None

        def build(counters: Counters) -> Creation:
            nonlocal made
            result = None
            if ruleset.active:
                facts = rulings.facts(req.run_id, req.step, req.args, req.context, principal)
                result = evaluate_rules(ruleset, facts, counters, now)
            made = self._creation(req, approval, checked, result, principal, now, grant)
            return made

        try:
            stored, created = await self._create(approval.namespace, now, build)
        except GrantUnavailable:  # the grant was revoked (or expired) since it was read: plan again without it
            grant = None
            stored, created = await self._create(approval.namespace, now, build)
        if made is None:  # pragma: no cover - the store calls `build` before it answers
            raise RuntimeError("the store created no approval")
        if not created:
            if stored.agent != agent:  # no agent's namespace is shared: another principal's key
                raise IdempotencyConflict(
                    "idempotency_key: is already in use; choose another one", field="idempotency_key"
                )
            choosable = settable(self.settings, made.approval.policy.name, principal)
            # a grant decides with no cards: the channels of a decision by one are not the request's
            by_grant = made.grant is not None or (stored.decision and stored.decision.source) is Source.GRANT
            await check_replay(
                self.store,
                stored,
                made.approval,
                deadline=req.deadline,
                settable=choosable,
                routed=ruleset.active or by_grant,
            )
            return stored, False
        log.info(
            "approval %s suspended: run=%s step=%s channels=%s by=%s%s",
            stored.id,
            req.run_id,
            req.step,
            ",".join(stored.channels),
            agent or "-",
            f" ({stored.status.value} by {stored.decision.decided_by})" if stored.decision else "",
        )
        posted = sum(1 for e in made.events if e.kind is EventKind.CARD_POSTED)
        self.committer.fire(outbox=posted < len(made.outbox), jobs=made.job is not None, wake=stored.wake_at)
        for e in made.events:
            if e.kind is EventKind.CARD_POSTED:
                self.observer.delivered(e.channel or "", OutboxKind.POST, e.kind)
                self._posted_inline(stored, e.channel or "")
        if stored.status.final:
            self.observer.transition(
                stored, EventKind.APPROVED if stored.status is Status.APPROVED else EventKind.REJECTED
            )
        return stored, True

    def _posted_inline(self, approval: Approval, channel: str) -> None:
        """The span of a card posted in the suspend's own commit (the web inbox's): the outbox
        records the others' (gateway.delivery.outbox)."""
        attrs = traces.approval_attributes(
            approval.id, approval.run_id, approval.step, approval.agent, **{"hitl.channel": parse_address(channel)[0]}
        )
        with self.tracer.span(traces.CARD, approval.trace, attrs | {"hitl.delivery": OutboxKind.POST.value}):
            pass

    async def _covering(self, req: SuspendRequest, approval: Approval, now: datetime) -> Grant | None:
        """The standing grant that decides this suspend, if any. A grant stands in for the person
        who made it: it decides only what they could decide now, by the same check as their own
        vote. Not once they are off the approvers (or their operator key is gone), never a
        request of their own (`requested_by`), never where the policy needs more than one
        person (`quorum`): one approver cannot make a standing decision that needs two, and only
        while the suspend's policy offers grants: taking `grants` off a policy stops its grants."""
        if approval.policy.quorum > 1 or not approval.policy.grants:  # grants are the suspend's policy's to offer
            return None
        grant = await self.grants.covering(approval.namespace, req.step, req.run_id, req.args, now)
        if grant is None:
            return None
        by = grant.granted_by
        operator = by.startswith("operator:")
        if operator and by not in self._operators:
            return None
        try:
            await self.decisions.authorize(Authority.OPERATOR if operator else Authority.APPROVER, by, approval)
        except (NotAnApprover, RequesterCannotDecide):
            return None
        return grant

    async def _create(self, namespace: str, now: datetime, build: Build) -> tuple[Approval, bool]:
        """Insert what `build` makes: with the budgets it reads in the same transaction, if the
        rules count any; with the use of the grant that decided it, if one did."""
        if keys := self.settings.rules.counters:
            return await self.store.create_counted(namespace, keys, now, build)
        c = build(NO_COUNTERS)
        return await self.store.create_approval(c.approval, c.events, c.outbox, job=c.job, grant=c.grant)

    def _approval(
        self,
        req: SuspendRequest,
        checked: _Checked,
        terms: EditTerms | None,
        encoded: str,
        state: str,
        key: str,
        agent: str | None,
        now: datetime,
        trace: TraceContext | None = None,
    ) -> Approval:
        """The approval as the agent asked for it, waiting."""
        policy = checked.policy
        deadline = rules.deadline_for(policy, now)
        return Approval(
            id=new_id(),
            idempotency_key=key,
            run_id=req.run_id,
            step=req.step,
            title=self.redactor.text(req.title),
            summary=self.redactor.text(req.summary),
            args=self.redactor.value(req.args),  # what cards, events, logs and the API show
            state=None,
            # raw, for the worker only: canonical_json({"args": ..., "state": ...}), byte for byte
            sealed=self.sealer.seal_json(f'{{"args":{encoded},"state":{state}}}'),
            channels=checked.channels,
            approvers=checked.approvers,
            policy=policy,
            worker=req.worker,
            requested_by=checked.requested_by,
            status=Status.WAITING,
            created_at=now,
            deadline=deadline,
            args_hash=args_hash(req.args, encoded=encoded),
            wake_at=rules.first_wake(policy, now, deadline),  # == rules.next_wake(approval)
            agent=agent,
            terms=terms,
            code_version=req.code_version,
            trace=trace,
        )

    def _creation(
        self,
        req: SuspendRequest,
        approval: Approval,
        checked: _Checked,
        result: RuleResult | None,
        principal: Principal | None,
        now: datetime,
        grant: Grant | None = None,
    ) -> Creation:
        """What the suspend commits: the approval (routed, or decided, by the rules' `result`,
        else by a standing `grant` that covers it), its `suspended` event, shadow rules' events,
        and its cards, or its decision and job."""
        by_rule: dict[str, Any] = {}  # what an `ask` rule chose in the agent's place, as stored
        if (
            result is not None
            and not rulings.decides(result)
            and (result.policy or result.channels or result.approvers)
        ):
            routed = replace(
                req,
                channels=result.channels or req.channels,
                approvers=rulings.narrowed(req.approvers, result.approvers),
                policy=result.policy or req.policy,
            )
            checked = self._validate(routed, principal, now, ruled=result)
            deadline = rules.deadline_for(checked.policy, now)
            approval = approval.evolve(
                channels=checked.channels,
                approvers=checked.approvers,
                policy=checked.policy,
                deadline=deadline,
                wake_at=rules.first_wake(checked.policy, now, deadline),
            )
            chosen = {
                "policy": checked.policy.name,
                "channels": list(checked.channels),
                "approvers": list(checked.approvers),
            }
            by_rule = {key: chosen[key] for key in chosen if getattr(result, key)}
        suspended = NewEvent(
            approval.id,
            EventKind.SUSPENDED,
            now,
            actor=approval.agent or checked.requested_by,  # who suspended: the principal (requested_by is in the data)
            data={
                "run_id": req.run_id,
                "step": req.step,
                "channels": list(checked.channels),
                "policy": checked.policy.name,
            }
            | ({"requested_by": checked.requested_by} if checked.requested_by else {})
            | rulings.suspended_data(result)
            | ({"routed": by_rule} if by_rule else {})  # a client may check its own approval against it
            | audit_facts(approval),
        )
        shadows = rulings.shadow_events(approval.id, result, now)
        ruled = result is not None and rulings.decides(result)
        if not rulings.grant_may_decide(result):  # a rule's ask, or a rule that failed: a person
            grant = None
        if ruled or grant is not None:
            if result is not None and ruled:  # a rule's deny still denies; its allow needs no grant
                decided, event = rulings.decide(approval.evolve(channels=()), result, now)
                grant = None
            elif grant is not None:
                decided, event = service_grants.decide(approval.evolve(channels=()), grant, now)
            events = [suspended, *shadows, event]
            job = None
            if decided.worker:
                job = NewJob(decided.id, decided.worker)
                events.append(NewEvent(decided.id, EventKind.JOB_QUEUED, now, data={"worker": decided.worker}))
            # requested (as asked, waiting), then decided: what a receiver sees of any approval
            announced = self._announce(approval, [suspended]) + self._announce(decided, events[1:])
            return Creation(decided, events, announced, job, grant.id if grant is not None else None)
        posts, posted = self._posts(approval, approval.channels, now)
        return Creation(approval, [suspended, *shadows, *posted], posts + self._announce(approval, [suspended]), None)

    def _announce(self, approval: Approval, events: Sequence[NewEvent]) -> list[NewOutbox]:
        """The outbound events of a suspend's events (none without `[[events.webhooks]]`)."""
        return self.announcer.announce(approval, events) if self.settings.events.webhooks else []

    def _posts(
        self, approval: Approval, channels: Sequence[str], now: datetime
    ) -> tuple[list[NewOutbox], list[NewEvent]]:
        """A card per channel: queued for the outbox, or, for a channel whose card is the row
        itself (the web inbox), posted in this commit with its `card_posted` event."""
        posts, events = [], []
        for c in channels:
            if posts_inline(self.channels.get(parse_address(c)[0])):
                ref = web_card_ref(approval.id)
                posts.append(NewOutbox(approval.id, c, OutboxKind.POST, ref=ref, posted_at=now))
                events.append(
                    NewEvent(approval.id, EventKind.CARD_POSTED, now, channel=c, data=card_posted(approval, ref))
                )
            else:
                posts.append(NewOutbox(approval.id, c, OutboxKind.POST))
        return posts, events

    # ---------------------------------------------------------------- reads
    async def get(self, approval_id: str, principal: Principal | None = None) -> Approval:
        """The approval; NotFound also when `principal` is an agent that did not create it."""
        approval = await self.store.get_approval(approval_id)
        if approval is None or (principal is not None and not principal.owns(approval.agent)):
            raise NotFound(f"approval {approval_id!r} not found")
        return approval

    async def view(self, approval: Approval) -> dict[str, Any]:
        """The approval as the API and `approvals show` give it: with its reminders, cards,
        deliveries and resume job."""
        out = approval.to_api()
        out["reminders"] = rules.reminders_view(approval)
        out["cards"] = [c.to_api() for c in await self.store.list_cards(approval.id)]
        out["deliveries"] = [
            {
                "id": o.id,
                "channel": o.channel,
                "kind": o.kind.value,
                "status": o.status.value,
                "attempts": o.attempts,
                "last_error": o.last_error,
            }
            # an outbound event also names the event it carries: the id `events/resend` answers with
            | ({"event_id": o.data.get("id"), "event_type": o.data.get("type")} if o.kind is OutboxKind.EVENT else {})
            for o in await self.store.list_outbox(approval.id)
        ]
        job = await self.store.get_job(approval.id)
        out["resume_job"] = job.to_api() if job else None
        return out

    # ---------------------------------------------------------------- decisions
    async def decide(
        self,
        approval_id: str,
        outcome: Outcome,
        actor: str,
        *,
        authority: Authority = Authority.APPROVER,
        comment: str | None = None,
        channel: str | None = None,
        on_behalf_of: str | None = None,
        args: dict[str, Any] | None = None,
        seen: str | None = None,
        seen_field: str = "round",
        grant: str | None = None,
    ) -> Approval:
        """A person's vote (gateway.service.commands.CastVote says what each field means): the
        command, built for the callers that hold its fields apart."""
        cmd = CastVote(
            approval_id, outcome, actor, authority, comment, channel, None, on_behalf_of, args, seen, seen_field, grant
        )
        return (await self.decisions.cast(cmd)).approval

    async def cancel(
        self, approval_id: str, by: str, reason: str | None = None, *, on_behalf_of: str | None = None
    ) -> Approval:
        """An operator's cancel (the API, the CLI)."""
        return await self.decisions.cancel(Cancel(approval_id, by, reason, on_behalf_of))

    async def extend(
        self,
        approval_id: str,
        duration: timedelta,
        actor: str,
        *,
        channel: str | None = None,
        authority: Authority = Authority.APPROVER,
        seen: int | None = None,
    ) -> Approval:
        return await self.decisions.extend(Extend(approval_id, duration, actor, authority, channel, seen=seen))

    async def attach_comment(self, approval_id: str, actor: str, comment: str, channel: str | None = None) -> Approval:
        return await self.decisions.comment(AddComment(approval_id, actor, comment, channel))

    # ---------------------------------------------------------------- the SLA clock
    async def apply_due(self, approval_id: str, now: datetime, *, current: Approval | None = None) -> str | None:
        """The scheduler's use case: apply the timeout, escalation or reminder due at `now`,
        exactly once. The CAS on `version` commits the transition with its events, card posts,
        syncs and reminders and the resume job, or nothing if another writer got there first.
        `current` (a row the caller just read) saves the first read."""
        return await self.expire(Expire(approval_id, now), current=current)

    async def expire(self, cmd: Expire, *, current: Approval | None = None) -> str | None:
        now = cmd.now

        async def plan(approval: Approval) -> Step | Done:
            step = _due_step(approval, now)
            return Done(approval, None) if step is None else step  # nothing due: no write

        try:
            done = await self.committer.transact(cmd.approval_id, plan, current=current)
        except NotFound:
            return None
        if done.event is None:
            return await self._repair_wake(done.approval, now)
        return done.event

    async def _repair_wake(self, approval: Approval, now: datetime) -> str | None:
        """A row due by `wake_at` with nothing to do (written by older code, or by hand): store
        its true next wake-up so the scheduler does not spin on it."""
        if approval.wake_at is None or approval.wake_at > now:
            return None  # another writer handled it
        fixed = approval.evolve(wake_at=rules.next_wake(approval), version=approval.version + 1)
        if await self.store.save_transition(fixed, approval.version, []):
            return "rescheduled"
        return None

    async def apply_due_many(self, approvals: Sequence[Approval], now: datetime) -> list[str | None]:
        """`apply_due` for a batch the scheduler just read: every transition in ONE transaction
        (each still a CAS on its version, with its own events, deliveries and job). Those that
        lose the CAS, and stale rows, take the one-by-one path."""
        plans = [(a, _due_step(a, now)) for a in approvals]
        writes = [self.committer.write(a, step) for a, step in plans if step is not None]
        won = iter(await self.store.save_policy_transitions(writes) if writes else [])
        results: list[str | None] = []
        for (approval, step), write in zip(plans, _align(plans, writes), strict=True):
            if step is not None and write is not None and next(won):
                self.committer.committed(write, step, quiet=True)
                results.append(step.transition.event)
            else:  # lost to another writer (re-read), or nothing due (repair the wake-up)
                results.append(await self.apply_due(approval.id, now, current=None if step else approval))
        return results

    def wake_outbox(self) -> None:
        """Deliveries were queued outside a transition (e.g. a card adopted by a press)."""
        self.committer.fire(outbox=True)


class _Checked(NamedTuple):
    """A suspend's policy, channels and identities once validated, in canonical form."""

    policy: Policy
    channels: tuple[str, ...]
    approvers: tuple[str, ...]
    requested_by: str | None


def _encoded(req: SuspendRequest) -> tuple[str, str]:
    """The canonical JSON of the args and the state, refused (400) when nested so deep that the
    redactor, which recurses, could not walk it (an HTTP body was measured already; this is for
    callers in process)."""
    out = []
    for name, value in (("args", req.args), ("state", req.state)):
        try:
            text = canonical_json(value)
        except RecursionError:
            text = "[" * MAX_DEPTH
        if text_too_deep(text, MAX_DEPTH - 1):  # the body that holds it is level 1
            raise ValidationError(name, f"is nested more than {MAX_DEPTH - 1} levels deep")
        out.append(text)
    return out[0], out[1]


def _due_step(approval: Approval, now: datetime) -> Step | None:
    transition = rules.apply_due(approval, now)
    return None if transition is None else Step(transition, "policy", None, _due_outbox(approval, transition), at=now)


def _align(
    plans: Sequence[tuple[Approval, Step | None]], writes: Sequence[TransitionWrite]
) -> list[TransitionWrite | None]:
    """The write of each plan, None where nothing was due."""
    it = iter(writes)
    return [next(it) if t is not None else None for _, t in plans]


def _due_outbox(before: Approval, transition: rules.Transition) -> list[NewOutbox]:
    """Deliveries of a scheduler transition (a final one gets its card syncs in `Committer.write`)."""
    after = transition.approval
    if transition.event is EventKind.ESCALATED:
        syncs = [NewOutbox(after.id, c, OutboxKind.SYNC) for c in before.channels]
        posts = [NewOutbox(after.id, c, OutboxKind.POST) for c in after.channels if c not in before.channels]
        return syncs + posts
    if transition.event is EventKind.REMINDED:
        data = {"number": after.reminders_sent, "escalations": after.escalations}
        return [NewOutbox(after.id, c, OutboxKind.REMIND, data) for c in after.channels]
    return []


__all__ = ["DENIED_KEPT", "AlreadyDecided", "Service", "SuspendRequest", "new_id"]
