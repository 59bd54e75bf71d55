"""A replayed suspend (the same idempotency key from the same principal) is answered with the
stored approval only when it asks for that same approval.

Otherwise whoever used the key first decides what the later caller gets: an agent could post,
under a key it can predict, a harmless title with no approvers, and hand a gate or a run that
suspends later the approval it made. Every field that shapes what the approvers see and who may
decide is compared in its stored, canonical form (identities canonical, policy resolved), so
that an honest retry of the same body still replays. A configured policy is compared by its name
and the keys the request may choose in it (`agent_may_set`): the rest is the operator's config,
and a deploy that changes it must not turn every waiting run's honest replay into a 409.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from gateway.core.errors import IdempotencyConflict
from gateway.core.events import EventKind
from gateway.core.models import Approval
from gateway.core.policy import time_between
from gateway.store import Store

__all__ = ["check_replay", "first_difference"]

_DEADLINE_SLACK = timedelta(seconds=1)  # a stored policy keeps whole seconds of its timeout


async def check_replay(
    store: Store,
    stored: Approval,
    asked: Approval,
    *,
    deadline: datetime | None,
    settable: frozenset[str] | None = None,
    routed: bool = False,
) -> None:
    """IdempotencyConflict (409) naming the first field where `asked` (the replay, validated and
    canonical) differs from `stored`; never the stored approval's id or token. `deadline` is the
    replay's own `deadline`, if it gave one; `settable`, the keys of a configured policy the
    request may choose (None: an inline policy, compared whole). `routed`: rules are on, so the
    channels, approvers, policy and deadline are the rules' to choose and not compared (a budget
    that filled since could route the replay differently; the stored approval stands)."""
    channels = stored.channels
    if stored.escalations:  # an escalation added channels: compare with those first asked for
        channels = await _suspended_channels(store, stored)
    field = first_difference(stored, asked, channels=channels, deadline=deadline, settable=settable, routed=routed)
    if field is not None:
        raise IdempotencyConflict(
            f"{field}: differs from the suspend that first used this idempotency_key"
            " (a retry must send the same request; a new request needs a new key)",
            field=field,
        )


_ROUTING = frozenset({"channels", "approvers", "policy"})


def first_difference(
    stored: Approval,
    asked: Approval,
    *,
    channels: tuple[str, ...],
    deadline: datetime | None,
    settable: frozenset[str] | None = None,
    routed: bool = False,
) -> str | None:
    """The request field where the replay `asked` differs from `stored` (whose first channels
    were `channels`), or None. Pure."""
    pairs: tuple[tuple[str, Any, Any], ...] = (
        ("run_id", stored.run_id, asked.run_id),
        ("step", stored.step, asked.step),
        ("args", stored.args_hash, asked.args_hash),
        ("title", stored.title, asked.title),
        ("summary", stored.summary, asked.summary),
        ("channels", sorted(channels), sorted(asked.channels)),
        ("approvers", sorted(stored.approvers), sorted(asked.approvers)),
        ("policy", _policy(stored, deadline is not None, settable), _policy(asked, deadline is not None, settable)),
        ("requested_by", stored.requested_by, asked.requested_by),
        ("worker", stored.worker, asked.worker),
        ("args_schema", _terms(stored, "schema"), _terms(asked, "schema")),
        ("editable", _terms(stored, "editable"), _terms(asked, "editable")),
    )
    for name, before, now in pairs:
        if before != now and not (routed and name in _ROUTING):
            return name
    if routed:
        return None
    timeout = stored.policy.timeout  # a deadline became it, in whole seconds from the creation
    if deadline is None or timeout is None or (settable is not None and "timeout" not in settable):
        return None
    asked_timeout = time_between(stored.policy, stored.created_at, deadline)  # business time with a calendar
    return "deadline" if abs(asked_timeout - timeout) >= _DEADLINE_SLACK else None


def _policy(approval: Approval, deadline_given: bool, settable: frozenset[str] | None) -> dict[str, Any]:
    """The resolved policy (of a configured one, its name and the `settable` keys); with a
    `deadline`, its timeout is compared as that instant instead (the same deadline is a different
    timeout at every retry)."""
    data = approval.policy.to_json()
    if settable is not None:
        data = {k: v for k, v in data.items() if k == "name" or k in settable}
    if deadline_given:
        data.pop("timeout", None)
    return data


def _terms(approval: Approval, key: str) -> Any:
    return None if approval.terms is None else approval.terms.to_json()[key]


async def _suspended_channels(store: Store, approval: Approval) -> tuple[str, ...]:
    """The channels of the approval's `suspended` event (its chained record of the request)."""
    for event in await store.list_events(approval.id):
        if event.kind == EventKind.SUSPENDED:
            return tuple(event.data.get("channels", approval.channels))
    return approval.channels
