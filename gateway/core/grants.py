"""Standing grants, pure: a person who approves may add "and allow the same for 1h" (or "for this
run"), when the approval's policy offers it (`grants`, capped by `grant_max`). A grant is bound
to the agent's namespace, the step, and the args it covers (`grant_fields`, or all of them: the
same args hash); a "run" grant also to the run id. While it lives (not revoked, before
`expires_at`), a suspend it covers is approved at once with `decided_by: "grant:ID"`.

The policy keys are parsed here (`parse_grant_keys`, for gateway.core.policy.parse_policy);
nothing here does I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hitl_sdk.keys import args_hash

from gateway.core.clock import iso
from gateway.core.durations import format_duration, parse_duration
from gateway.core.errors import ValidationError
from gateway.core.models import Approval, Policy

RUN = "run"  # a grant for the rest of the run: bound to its run id, for at most `grant_max`
GRANT_PREFIX = "grant:"
DEFAULT_MAX = timedelta(hours=24)
MAX_OFFERS = 10
MAX_FIELDS = 64


@dataclass(frozen=True, slots=True)
class Grant:
    """One standing grant. `args_hash` is the hash of the covered args (`covered_hash`),
    `fields` the top-level args it covers (None: all). `granted_by` is who approved with it
    (`person`: their `[people]` name, if any)."""

    id: str
    namespace: str
    step: str
    run_id: str | None  # set only for a "run" grant
    fields: tuple[str, ...] | None
    args_hash: str
    duration: str  # what was offered and chosen: "1h", "run"
    granted_by: str
    approval_id: str
    created_at: datetime
    expires_at: datetime
    person: str | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    uses: int = 0
    last_used_at: datetime | None = None

    @property
    def decided_by(self) -> str:
        return GRANT_PREFIX + self.id

    def live(self, now: datetime) -> bool:
        return self.revoked_at is None and now < self.expires_at

    def covers(self, namespace: str, step: str, run_id: str, args: Mapping[str, Any], now: datetime) -> bool:
        """Whether a suspend with these facts is decided by this grant at `now`."""
        return (
            self.live(now)
            and self.namespace == namespace
            and self.step == step
            and (self.run_id is None or self.run_id == run_id)
            and covered_hash(args, self.fields) == self.args_hash
        )

    @property
    def shown_by(self) -> str:
        return self.person or self.granted_by

    def to_api(self, now: datetime | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "agent": self.namespace or None,
            "step": self.step,
            "run_id": self.run_id,
            "fields": list(self.fields) if self.fields is not None else None,
            "args_hash": self.args_hash,
            "grant": self.duration,
            "granted_by": self.granted_by,
            "person": self.person,
            "approval_id": self.approval_id,
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "revoked_at": iso(self.revoked_at),
            "revoked_by": self.revoked_by,
            "uses": self.uses,
            "last_used_at": iso(self.last_used_at),
        }
        if now is not None:
            out["live"] = self.live(now)
        return out


def covered_hash(args: Mapping[str, Any], fields: tuple[str, ...] | None) -> str:
    """The hash a grant binds: of all the args (the approval's own args hash), or of the named
    top-level fields that are present (a field left out differs from one set to null)."""
    if fields is None:
        return args_hash(dict(args))
    return args_hash({"grant_fields": sorted(fields), "args": {k: args[k] for k in fields if k in args}})


def _offer(field: str, value: Any) -> tuple[str, timedelta | None]:
    """One offered grant, normalized: ("run", None) or ("1h", 1 hour)."""
    if value == RUN:
        return RUN, None
    try:
        delta = parse_duration(value)
    except ValueError as exc:
        raise ValidationError(field, f'{exc} (or "run")') from None
    if delta <= timedelta(0):
        raise ValidationError(field, "must be positive")
    return format_duration(delta), delta


def parse_grant_keys(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`grants`, `grant_max` (default 24h; an offered duration above it is an error naming
    `grants[i]`) and `grant_fields` (a non-empty list of top-level arg names) of a policy."""
    raw = data.get("grants", [])
    if not isinstance(raw, list | tuple) or len(raw) > MAX_OFFERS:
        raise ValidationError(f"{prefix}grants", f'must be a list of at most {MAX_OFFERS} durations or "run"')
    most = DEFAULT_MAX
    if data.get("grant_max") is not None:
        label, cap = _offer(f"{prefix}grant_max", data["grant_max"])
        if cap is None:
            raise ValidationError(f"{prefix}grant_max", 'must be a duration like "24h", not "run"')
        most = cap
    offers: list[str] = []
    for i, value in enumerate(raw):
        label, delta = _offer(f"{prefix}grants[{i}]", value)
        if delta is not None and delta > most:
            raise ValidationError(f"{prefix}grants[{i}]", f"{label} is longer than grant_max ({format_duration(most)})")
        if label not in offers:
            offers.append(label)
    fields = data.get("grant_fields")
    if fields is not None:
        if (
            not isinstance(fields, list | tuple)
            or not 1 <= len(fields) <= MAX_FIELDS
            or not all(isinstance(f, str) and f for f in fields)
        ):
            raise ValidationError(
                f"{prefix}grant_fields",
                f"must be a list of 1 to {MAX_FIELDS} top-level arg names (leave it out to cover all args)",
            )
        fields = tuple(dict.fromkeys(fields))
    return {"grants": tuple(offers), "grant_max": most, "grant_fields": fields}


def chosen(policy: Policy, value: str) -> str:
    """The offer a decision names (`"grant": "1h"`), as the policy spells it; a ValidationError
    naming `grant` when the policy does not offer it."""
    offered = ", ".join(policy.grants) or "none"
    if value != RUN:
        try:
            value = format_duration(parse_duration(value))
        except ValueError:
            raise ValidationError("grant", f"must be one of the policy's grants ({offered}), got {value!r}") from None
    if value not in policy.grants:
        raise ValidationError("grant", f"policy {policy.name!r} does not offer {value!r} (grants: {offered})")
    return value


def label(offer: str) -> str:
    """An offer as buttons say it: "1h", "this run"."""
    return "this run" if offer == RUN else offer


def offers(policy: Policy) -> tuple[str, ...]:
    """What a card offers with an approve: the policy's grants, where one person decides."""
    return policy.grants if policy.quorum == 1 else ()


def lifetime(policy: Policy, offer: str) -> timedelta:
    return policy.grant_max if offer == RUN else parse_duration(offer)


def make(
    grant_id: str,
    approval: Approval,
    offer: str,
    covered: str,
    granted_by: str,
    person: str | None,
    now: datetime,
) -> Grant:
    """The grant an approve with `offer` creates on `approval` (`covered`: covered_hash of its
    raw args)."""
    policy = approval.policy
    return Grant(
        id=grant_id,
        namespace=approval.namespace,
        step=approval.step,
        run_id=approval.run_id if offer == RUN else None,
        fields=policy.grant_fields,
        args_hash=covered,
        duration=offer,
        granted_by=granted_by,
        approval_id=approval.id,
        created_at=now,
        expires_at=now + lifetime(policy, offer),
        person=person,
    )


def first_covering(
    grants: list[Grant], namespace: str, step: str, run_id: str, args: Mapping[str, Any], now: datetime
) -> Grant | None:
    """The grant that decides a suspend: of those that cover it, the one that expires last."""
    live = [g for g in grants if g.covers(namespace, step, run_id, args, now)]
    return max(live, key=lambda g: (g.expires_at, g.id)) if live else None


__all__ = [
    "GRANT_PREFIX",
    "RUN",
    "Grant",
    "chosen",
    "covered_hash",
    "first_covering",
    "label",
    "lifetime",
    "make",
    "offers",
    "parse_grant_keys",
]
