"""The Store interface, as narrow ports (12 methods or fewer each). Every use case is one call,
and one call is one transaction.

`tests/store/test_contract.py` runs the same suite against every implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, Protocol

from gateway.core.delegation import Delegation, DelegationEvent
from gateway.core.grants import Grant
from gateway.core.models import (
    Approval,
    Card,
    ClaimedJob,
    Decision,
    DeliveryStatus,
    Event,
    JobStatus,
    NewEvent,
    NewOutbox,
    OutboxItem,
    ResumeJob,
    Status,
    StepRecord,
)
from gateway.core.rules import CounterKey, Counters, CounterSnapshot
from gateway.core.webhooks import Backlog
from gateway.core.webpush import PushSubscription
from gateway.store.audit import AuditStore
from gateway.store.sql import Dialect


@dataclass(frozen=True, slots=True)
class NewJob:
    approval_id: str
    worker: str


class Creation(NamedTuple):
    """What a suspend inserts in one transaction: the approval, its events, its cards, and its
    resume job when it is decided at once; `grant`: the id of the standing grant that decided
    it, whose use is recorded in the same transaction (GrantUnavailable if it died first)."""

    approval: Approval
    events: list[NewEvent]
    outbox: list[NewOutbox]
    job: NewJob | None
    grant: str | None = None


class DelegationUnavailable(Exception):
    """The delegation a decision was made through was revoked or ended before its transaction:
    nothing was written."""


class SeenBefore(Exception):
    """An inbound delivery's de-duplication marks, written with what it commits, were recorded
    before (its first delivery committed, or a concurrent copy of it did): nothing was written."""


class GrantUnavailable(Exception):
    """The grant a suspend was decided by was revoked or expired before its transaction: nothing
    was written; the suspend is planned again without it."""


Build = Callable[[Counters], Creation]  # a suspend's Creation, from the budgets read in its transaction


class RuleTrace(NamedTuple):
    """One rules event (`suspended` or `rule_shadow`) with how its approval stands now: what
    `rules report` tallies."""

    approval_id: str
    kind: str
    data: dict[str, Any]
    agent: str | None
    status: Status
    decision: Decision | None


@dataclass(frozen=True, slots=True)
class CardUpdate:
    """What a delivery learned about a card: posted (with its ref), updated, or failed."""

    channel: str
    ref: str | None
    status: DeliveryStatus
    error: str | None = None


@dataclass(frozen=True, slots=True)
class OutboxResult:
    """A delivery's result, as `finish_outbox` records it (`finish_outboxes`: many at once)."""

    item_id: int
    owner: str
    now: datetime
    status: DeliveryStatus
    next_attempt_at: datetime | None = None
    error: str | None = None
    card: CardUpdate | None = None
    events: Sequence[NewEvent] = ()
    count_attempt: bool = True


@dataclass(frozen=True, slots=True)
class Prompt:
    """A question the gateway asked someone (e.g. "why reject?"), waiting for their reply."""

    key: str  # where the reply will point, e.g. "<kind>:<chat_id>:<prompt_message_id>"
    approval_id: str
    actor: str  # only this person's reply answers it
    purpose: str  # e.g. "reject_reason"
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class WebSession:
    """One signed-in web session as the store keeps it: `id` is the hash of the cookie's session
    id (gateway.service.websessions), never anything a cookie could be made from."""

    id: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class TransitionWrite:
    """One compare-and-set transition: the new approval, the version it replaces, and what
    commits with it."""

    approval: Approval
    expected_version: int
    events: Sequence[NewEvent]
    outbox: Sequence[NewOutbox] = ()
    job: NewJob | None = None
    grant: Grant | None = None  # a standing grant the approve made (gateway.core.grants)
    delegation: DelegationEvent | None = None  # the use of the delegation it was decided through
    marks: Sequence[str] = ()  # the inbound de-duplication marks of the press that made it


class ViewOf(NamedTuple):
    """What `approval_views` reads of one approval: it, its card on the address `card` (when
    given) and its events (when asked)."""

    approval_id: str
    card: str | None = None
    events: bool = False


class ApprovalSnapshot(NamedTuple):
    """An approval with what a caller needs of it, read in one snapshot (`approval_views`)."""

    approval: Approval | None
    card: Card | None = None
    events: list[Event] | None = None


class LifecyclePort(Protocol):
    """Connecting, migrating, wake-ups and liveness: each backend's own (sqlite/, postgres/)."""

    dialect: Dialect

    async def open(self) -> None:
        """Connect and apply pending migrations."""
        ...

    async def close(self) -> None: ...

    async def schema_version(self) -> int: ...

    async def subscribe(self, callback: Callable[[str, str], None]) -> None:
        """Call `callback(topic, payload)` when another process commits work: topic `outbox`,
        `jobs` or `wake` (payload: epoch seconds of a new wake-up). Only a wake-up hint: loops
        keep polling. A no-op where there is only one process (SQLite)."""
        ...

    async def take_over(self, owner: str, now: datetime, *, exclusive: bool = False) -> int:
        """Start claiming as `owner`: from now on prove it alive, and release at once the claims
        of claimers proved gone; return how many were released. SQLite, with `exclusive` (a
        `serve`): take the file's lock (`StoreInUse` if another serve holds it); holding it
        proves every claim in the file a dead process's. PostgreSQL: an advisory lock held on a
        connection of its own plus a heartbeat (postgres/liveness.py)."""
        ...

    async def reap(self, owner: str, now: datetime) -> int:
        """Renew `owner`'s proof of life and release the claims of claimers proved gone since
        (the runtime calls it every half second); return how many were released."""
        ...

    async def release_claims(self, owner: str, now: datetime) -> int:
        """Hand back every claim `owner` still holds (a stopping gateway: jobs, deliveries and
        wake-ups), claimable by another process at once; then stop proving `owner` alive."""
        ...


class ApprovalPort(Protocol):
    """Approvals and their compare-and-set transitions (claims: each backend's own)."""

    async def create_approval(
        self,
        approval: Approval,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox],
        *,
        job: NewJob | None = None,
        grant: str | None = None,
    ) -> tuple[Approval, bool]:
        """Insert unless the idempotency key exists in the approval's namespace (its agent's,
        or no agent's: `Approval.namespace`). Returns (stored approval, created): on a conflict,
        the approval that holds the key in that namespace, never another namespace's. `job`:
        an approval decided at once (by a rule or grant) with its worker's resume job; `grant`:
        the grant that decided it, its use recorded if inserted (GrantUnavailable if dead)."""
        ...

    async def create_counted(
        self, namespace: str, keys: Collection[CounterKey], now: datetime, build: Build
    ) -> tuple[Approval, bool]:
        """`create_approval` of what `build` makes of the budgets `keys` (the namespace's
        approved approvals since `now - window`), read in the same transaction under the
        namespace's budget lock."""
        ...

    async def get_approval(self, approval_id: str) -> Approval | None: ...

    async def approval_views(self, wanted: Sequence[ViewOf]) -> list[ApprovalSnapshot]:
        """What each `ViewOf` asks of its approval, in order, all in one snapshot: one
        transaction instead of one per read (a press; a batch of deliveries)."""
        ...

    async def list_approvals_by_age(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
        search: str | None = None,
    ) -> list[Approval]:
        """Oldest first (the web inbox). `channel` matches an address ('<kind>:<target>') or a
        kind alone (every address of that kind); `search`, text in the title, summary, run id,
        step or agent (case-insensitive; `%` and `_` are plain characters)."""
        ...

    async def list_approvals(
        self,
        *,
        status: Status | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        agent: str | None = None,
    ) -> list[Approval]:
        """Newest first; `agent` keeps only the approvals that principal created."""
        ...

    async def save_transition(
        self,
        approval: Approval,
        expected_version: int,
        events: Sequence[NewEvent],
        outbox: Sequence[NewOutbox] = (),
        job: NewJob | None = None,
        grant: Grant | None = None,
        delegation: DelegationEvent | None = None,
        marks: Sequence[str] = (),
    ) -> bool:
        """Compare-and-set on `version`: write everything (and `grant`, made by the approve;
        `delegation`, the use of the delegation it was decided through, DelegationUnavailable
        if that is no longer in force; `marks`, the inbound de-duplication marks of the press
        that made it, SeenBefore if one was recorded before), or nothing and return False."""
        ...

    async def save_policy_transitions(self, writes: Sequence[TransitionWrite]) -> list[bool]:
        """Many scheduler transitions (timeout, escalation, reminder) in ONE transaction, each
        still a CAS on its own `version` with its own events, outbox rows and job; returns which
        won. Writes only the columns such a transition changes: status, version, deadline,
        wake_at, decision, escalations, reminders_sent and channels."""
        ...

    async def due_approvals(self, now: datetime, limit: int) -> list[Approval]:
        """Waiting approvals whose `wake_at` is at or before `now`, earliest first."""
        ...

    async def claim_due(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[Approval]:
        """Lease up to `limit` approvals whose `wake_at` is at or before `now`, earliest first, so
        that one replica's scheduler handles each. `save_transition` releases the lease; if the
        owner dies, the approval is claimable again once the lease runs out."""
        ...

    async def next_wake_at(self) -> datetime | None: ...

    async def count_by_status(self) -> dict[str, int]: ...


class RulePort(Protocol):
    """What the rules read outside a suspend: the budgets for a dry run, the history for a report."""

    async def read_counters(self, namespace: str, keys: Collection[CounterKey], now: datetime) -> CounterSnapshot:
        """The budgets `keys` of the namespace at `now`, as a suspend reads them (no lock: a dry
        run decides nothing, so a suspend committing meanwhile changes nothing it holds)."""
        ...

    async def rule_history(self, since: datetime, limit: int) -> list[RuleTrace]:
        """The `suspended` and `rule_shadow` events since `since`, oldest first, at most `limit`."""
        ...


class EventPort(Protocol):
    """The approvals' event log (hash-chained: gateway/core/audit.py)."""

    async def append_events(self, events: Sequence[NewEvent]) -> None: ...

    async def list_events(self, approval_id: str) -> list[Event]: ...

    async def last_event_id(self) -> int:
        """The newest event's id (0 when there is none): an index probe, which the live web
        pages poll to learn that something changed."""
        ...


class DeliveryPort(Protocol):
    """The outbox (deliveries to channels) and the cards they posted."""

    async def claim_outbox(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[OutboxItem]:
        """Lease up to `limit` due pending deliveries."""
        ...

    async def finish_outbox(
        self,
        item_id: int,
        owner: str,
        *,
        now: datetime,
        status: DeliveryStatus,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
        card: CardUpdate | None = None,
        events: Sequence[NewEvent] = (),
        count_attempt: bool = True,
    ) -> bool:
        """Record a delivery result. `pending` with `next_attempt_at` schedules a retry."""
        ...

    async def finish_outboxes(self, results: Sequence[OutboxResult]) -> list[bool]:
        """Record many delivery results in one transaction (deliveries that finished together),
        each only if its owner still holds the row; which were recorded."""
        ...

    async def enqueue_outbox(self, items: Sequence[NewOutbox], now: datetime) -> None: ...

    async def list_outbox(self, approval_id: str) -> list[OutboxItem]: ...

    async def get_card(self, approval_id: str, channel: str) -> Card | None: ...

    async def list_cards(self, approval_id: str) -> list[Card]: ...

    async def cards_needing_attention(self, limit: int = 50) -> list[Card]:
        """Cards whose post failed for good or is `uncertain`, most recently updated first."""
        ...

    async def requeue_post(self, approval_id: str, channel: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        """Put a post that failed for good or is `uncertain` back in the queue, with the events;
        False (and nothing written) if there is no such post."""
        ...

    async def adopt_card(
        self, approval_id: str, channel: str, ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        """Record `ref` as the card of (approval, channel) unless one is recorded already (a post
        whose outcome was unknown, found when someone pressed it); the events only if it was."""
        ...

    async def move_card(
        self, approval_id: str, channel: str, old_ref: str, new_ref: str, now: datetime, events: Sequence[NewEvent] = ()
    ) -> bool:
        """Replace the card's ref `old_ref` by `new_ref` (its chat moved); False, and nothing
        written, if the card's ref is not `old_ref`."""
        ...


class WebhookPort(Protocol):
    """Outbound events (outbox rows of kind `event`): the dashboard's backlog and an operator's
    "send again"."""

    async def webhook_backlog(self) -> list[Backlog]:
        """Per webhook, its outbound events pending, failing and given up, with the last error."""
        ...

    async def requeue_events(self, ids: Sequence[int], now: datetime, events: Sequence[NewEvent]) -> int:
        """Put the outbound events `ids` that were given up back in the queue, due at `now`, with
        the events, in one transaction; how many were (0: none was given up, nothing written)."""
        ...


class JobPort(Protocol):
    """Resume jobs: the worker run after a decision."""

    async def claim_launches(self, now: datetime, owner: str, lease: timedelta, limit: int) -> list[ClaimedJob]:
        """Lease up to `limit` due jobs (queued and due, or running with an expired lease) to
        `owner`, one attempt more each, and append each one's `job_started` event (actor
        `owner`, data `{"attempt": N}`) in the same transaction; with each job, what it launches
        with, read in that transaction too: its approval and its run's journal (`get_steps` in
        the approval's namespace). One transaction for the claim and the launches' reads, not one
        more per job."""
        ...

    async def finish_job(
        self,
        job_id: int,
        owner: str,
        *,
        claim: int,
        now: datetime,
        status: JobStatus,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
        output_tail: str | None = None,
        events: Sequence[NewEvent] = (),
        outbox: Sequence[NewOutbox] = (),
    ) -> bool:
        """Record an attempt's result (with its events and the outbound events that announce
        it), only if `owner` still holds the lease."""
        ...

    async def extend_job_lease(self, job_id: int, owner: str, until: datetime, *, claim: int) -> bool:
        """Renew the lease of `owner`'s claim number `claim` (the job's `claims` when it was
        claimed); False once that claim is over: recorded, or the lease ran out and the job was
        claimed again, by another runner or by `owner` itself."""
        ...

    async def get_job(self, approval_id: str) -> ResumeJob | None: ...

    async def list_jobs(
        self, status: JobStatus | None = None, limit: int = 100, *, agent: str | None = None
    ) -> list[ResumeJob]:
        """Newest first; `agent` keeps only the jobs of the approvals that principal created."""
        ...

    async def count_jobs_by_status(self) -> dict[str, int]:
        """Resume jobs per status (for /metrics and the dashboard)."""
        ...

    async def requeue_job(self, approval_id: str, now: datetime, events: Sequence[NewEvent]) -> bool:
        """Put a failed job back in the queue with a fresh attempt budget."""
        ...


class JournalPort(Protocol):
    """The SDK's step journal, per run and namespace."""

    async def get_steps(self, run_id: str, *, namespace: str) -> list[StepRecord]:
        """The journal of `run_id` in `namespace` (an agent's identity, or '' for no agent's)."""
        ...

    async def record_step(self, step: StepRecord, *, namespace: str) -> StepRecord:
        """Journal a step of the run in `namespace`; the first record wins, a later one returns
        the stored record."""
        ...

    async def run_namespaces(self, run_id: str) -> list[str]:
        """The namespaces in which `run_id` has approvals or journal steps, sorted ('' is no
        agent's); empty for a run id nobody used."""
        ...

    async def list_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        """Runs (`run_id` and `namespace`) with their step counts, newest activity first (for
        the dashboard)."""
        ...

    async def step_stats(self, limit: int = 100) -> list[dict[str, Any]]:
        """Per step name over the journal (suspended rows left out): `name`, `runs`,
        `attempts`, `retries` (attempts beyond the first), `failures`, `mean_seconds`,
        `total_seconds`; most retries first (for the dashboard and /metrics)."""
        ...


class GrantPort(Protocol):
    """Standing grants (gateway/core/grants.py). Creating one with its approve is
    `save_transition(grant=)`, recording a use is `create_approval(grant=)`: each in the
    transaction of its approval."""

    async def create_grant(self, grant: Grant) -> None: ...

    async def get_grant(self, grant_id: str) -> Grant | None: ...

    async def list_grants(self, now: datetime, *, live: bool = True, limit: int = 100) -> list[Grant]:
        """Newest first: the grants live at `now`, or (`live=False`) every one."""
        ...

    async def live_grants(self, namespace: str, step: str, run_id: str, now: datetime) -> list[Grant]:
        """The grants that may cover a suspend of `step` in `namespace` and `run_id` at `now`
        (the caller compares the covered args: `Grant.covers`)."""
        ...

    async def revoke_grant(self, grant_id: str, by: str, now: datetime, events: Sequence[NewEvent] = ()) -> bool:
        """Revoke a live or expired grant once; the events only if this call revoked it."""
        ...


class DelegationPort(Protocol):
    """Delegations (gateway/core/delegation.py) and their audit trail: creating and revoking
    one writes its `created` / `revoked` line in the same transaction."""

    async def create_delegation(self, d: Delegation) -> None: ...

    async def get_delegation(self, delegation_id: str) -> Delegation | None: ...

    async def list_delegations(self, now: datetime, *, live: bool = True, limit: int = 100) -> list[Delegation]:
        """Newest first: those not over at `now` (and not revoked), or (`live=False`) every one."""
        ...

    async def active_delegations(self, now: datetime, delegate: str | None = None) -> list[Delegation]:
        """Those in force at `now` (to the identity `delegate` only, when given), oldest first."""
        ...

    async def revoke_delegation(self, delegation_id: str, by: str, now: datetime) -> bool:
        """Revoke it once; False (and nothing recorded) if it was revoked already."""
        ...

    async def delegation_events(self, delegation_id: str) -> list[DelegationEvent]:
        """Its audit trail, oldest first."""
        ...


class HousekeepingPort(Protocol):
    """Inbound de-duplication, web sessions, prompts, and pruning them."""

    async def remember_inbound(self, key: str, now: datetime) -> bool:
        """True the first time `key` is seen; False for a redelivery."""
        ...

    async def remember_delivery(self, keys: Sequence[str], now: datetime, events: Sequence[NewEvent] = ()) -> bool:
        """Record the de-duplication marks of one inbound delivery in one transaction: True if
        none was seen before, and then the events too; False (no event) for a redelivery."""
        ...

    async def prune(self, now: datetime, inbound_before: datetime, limit: int) -> int:
        """Delete up to `limit` inbound de-duplication marks older than `inbound_before`, and the
        prompts and web sessions expired at `now`; return how many rows went."""
        ...

    async def create_session(self, session_id: str, user: str, now: datetime, expires_at: datetime) -> None:
        """Remember a signed-in web session (`session_id` is a hash, never the cookie itself)."""
        ...

    async def session_user(self, session_id: str, now: datetime) -> str | None:
        """The user of a live session, or None (unknown, revoked or expired)."""
        ...

    async def delete_session(self, session_id: str) -> bool:
        """Revoke one session (logout); True if it existed."""
        ...

    async def delete_sessions(self, keep_users: Collection[str]) -> int:
        """Revoke every session of a user not in `keep_users` (removed from the config)."""
        ...

    async def user_sessions(self, user: str, now: datetime) -> list[WebSession]:
        """`user`'s live sessions (not expired at `now`), newest first."""
        ...

    async def delete_user_session(self, user: str, session_id: str) -> bool:
        """Revoke one session if it is `user`'s; True if it was."""
        ...

    async def delete_other_sessions(self, user: str, keep: str) -> int:
        """Revoke every session of `user` but `keep`; how many went."""
        ...

    async def save_prompt(self, prompt: Prompt) -> None:
        """Remember a pending prompt (replacing one with the same key)."""
        ...

    async def take_prompt(self, key: str, actor: str, now: datetime) -> Prompt | None:
        """Consume the prompt `key` if `actor` owns it and it has not expired; else None.
        Expired prompts are deleted on the way."""
        ...


class PushPort(Protocol):
    """The web inbox's Web Push subscriptions, one per browser (gateway/core/webpush.py)."""

    async def save_push_subscription(self, sub: PushSubscription) -> None:
        """Add it, or replace the row of the same endpoint (its id too)."""
        ...

    async def push_subscription(self, sub_id: str) -> PushSubscription | None:
        """The subscription of this id, or None (unsubscribed, revoked, replaced, gone)."""
        ...

    async def revoke_push_subscription(self, sub_id: str, user: str) -> bool:
        """Delete the subscription of this id if it is `user`'s; whether it did."""
        ...

    async def push_subscriptions(self) -> list[PushSubscription]:
        """Every subscription, by user."""
        ...

    async def delete_push_subscription(self, endpoint: str, user: str | None = None) -> bool:
        """Delete the subscription of `endpoint` (only if it is `user`'s, when given)."""
        ...


class ClaimsPort(Protocol):
    """The groups each identity's latest OpenID sign-in claimed (mapped to configured groups)."""

    async def set_claimed_groups(self, identity: str, groups: Collection[str], now: datetime) -> None:
        """Replace the identity's claimed groups with `groups` (none: it is in none)."""
        ...

    async def claimed_groups(self, identity: str, since: datetime) -> frozenset[str]:
        """The group names the identity's latest sign-in claimed, if it signed in `since` then."""
        ...


class Store(
    LifecyclePort,
    ApprovalPort,
    EventPort,
    DeliveryPort,
    WebhookPort,
    JobPort,
    JournalPort,
    HousekeepingPort,
    GrantPort,
    DelegationPort,
    RulePort,
    PushPort,
    ClaimsPort,
    AuditStore,
    Protocol,
):
    """Every port in one (the audit calls are in gateway/store/audit.py). sqlite/ and
    postgres/ implement it, each port once for both in gateway/store/shared/."""
