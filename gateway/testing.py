"""Reusable test helpers: an injectable FakeClock and a settings factory.

Shipped in the package so that users can test their own agents against the gateway too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.config import Settings, load_settings
from gateway.core.keys import args_hash
from gateway.core.models import Approval, Policy, Status
from gateway.core.policy import deadline_for, next_wake

TEST_SECRET = "test-secret-key-0123456789abcdef"
TEST_API_KEY = "test-api-key-0123456789abcdef"  # an agent (api_keys): suspends, reads its own
TEST_OPERATOR_KEY = "test-operator-key-0123456789abcdef"  # operator:test: decides, cancels, retries


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2030, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float = 0, **kw: float) -> datetime:
        self._now += timedelta(seconds=seconds, **kw)
        return self._now

    def set(self, when: datetime) -> None:
        if when.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware datetime")
        self._now = when


def make_settings(db_url: str, sections: Mapping[str, Any] | None = None) -> Settings:
    """Settings for tests: no config file, no environment, test keys, the given store. A
    section is a table, or a list of tables (`rule=[{...}, ...]` for `[[rule]]`)."""
    defaults: dict[str, Any] = {
        "store": {"url": db_url},
        "security": {
            "secret_keys": [TEST_SECRET],
            "api_keys": [TEST_API_KEY],
            "operators": {"test": TEST_OPERATOR_KEY},
            "token_decisions": True,
        },
        "server": {"port": 0},
    }
    for section, values in (sections or {}).items():
        defaults[section] = list(values) if isinstance(values, list) else {**defaults.get(section, {}), **values}
    named = ("policies", "workers", "calendars")  # the [GROUP.NAME] tables
    plain = {k: v for k, v in defaults.items() if k not in named}
    tables = {k: v for k, v in defaults.items() if k in named}
    return load_settings(None, env={}, defaults=plain, tables=tables)


def make_approval(policy: Policy, created_at: datetime, n: int = 0, **over: Any) -> Approval:
    """A waiting approval built in memory (deadline and wake-up from its policy), for pure tests
    and benchmarks."""
    args = {"n": n}
    approval = Approval(
        id=f"appr{n:012d}",
        idempotency_key=f"key-{n}",
        run_id=f"run-{n}",
        step="step",
        title=f"Approval {n}",
        summary="",
        args=args,
        state={"cursor": n},
        channels=("web",),
        approvers=(),
        policy=policy,
        worker=None,
        requested_by=None,
        status=Status.WAITING,
        created_at=created_at,
        deadline=deadline_for(policy, created_at),
        args_hash=args_hash(args),
    ).evolve(**over)
    return approval.evolve(wake_at=next_wake(approval))
