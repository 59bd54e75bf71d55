"""The store's use cases are written once (gateway/store/shared/): a backend defines only what
really differs, each port stays narrow, and a SQLite transaction that would suspend fails loudly
instead of blocking the writer."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from gateway.store import base
from gateway.store.postgres import PostgresStore
from gateway.store.shared import SQLStore, Tx, run_at_once
from gateway.store.sqlite import SQLiteStore

PORTS = (
    base.LifecyclePort,
    base.ApprovalPort,
    base.EventPort,
    base.DeliveryPort,
    base.WebhookPort,
    base.JobPort,
    base.JournalPort,
    base.HousekeepingPort,
    base.GrantPort,
    base.DelegationPort,
    base.RulePort,
    base.PushPort,
    base.ClaimsPort,
    base.AuditStore,
)
# What a backend keeps: lifecycle and liveness, claims, and the audit reads and sealing (arrays
# against IN lists, row locks against the one writer). What a write reads back (RETURNING
# against a SELECT after) is its Tx's. SQLite's create_approval only renames an id collision.
OWN = {
    "open",
    "close",
    "schema_version",
    "subscribe",
    "take_over",
    "reap",
    "release_claims",
    "claim_due",
    "claim_outbox",
    "claim_launches",
    "audit_approvals",
    "audit_events",
    "audit_chains",
    "audit_missing_event",
    "write_checkpoint",
}


def _methods(cls: type) -> set[str]:
    return {n for n, v in vars(cls).items() if inspect.iscoroutinefunction(v) and not n.startswith("_")}


def test_each_port_is_narrow() -> None:
    for port in PORTS:
        assert len(_methods(port)) <= 12, port.__name__


def test_every_other_use_case_is_written_once_for_both_backends() -> None:
    used = set().union(*(_methods(p) for p in PORTS))
    shared = used - OWN
    for name in shared:
        assert getattr(PostgresStore, name) is getattr(SQLStore, name), f"{name} is not written once"
        if name != "create_approval":  # SQLite's wraps the shared one (an id collision's message)
            assert getattr(SQLiteStore, name) is getattr(SQLStore, name), f"{name} is not written once"
    assert used >= OWN


async def test_a_synchronous_transaction_that_suspends_fails() -> None:
    async def suspends(tx: Tx) -> int:
        await tx.execute("SELECT 1")
        return 1

    class Suspending:
        async def execute(self, sql: str, params: object = ()) -> int:
            await asyncio.sleep(0)
            return 0

    with pytest.raises(RuntimeError, match="suspended"):
        run_at_once(suspends, Suspending())  # type: ignore[arg-type]
