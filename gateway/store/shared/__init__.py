"""The store's use cases, written once over the named SQL (gateway/store/sql/) for both
backends: each port of gateway/store/base.py is one mixin here, over the narrow `Backend`
interface (backend.py: fetch one, fetch all, a transaction of a `Tx`, tx.py). sqlite/ and
postgres/ subclass `SQLStore` and `Tx`, and add only what differs: the engine or pool, claims,
notify, liveness, migrations, and in their `Tx` the calls their driver and dialect make their
own way (many rows at once, where a chain's head lives, what a write reads back)."""

from gateway.store.shared.approvals import ApprovalsSQL, EventsSQL
from gateway.store.shared.audit import AuditSQL
from gateway.store.shared.backend import Backend, Transaction, Tx, run_at_once
from gateway.store.shared.delegations import DelegationsSQL
from gateway.store.shared.deliveries import DeliveriesSQL, JobsSQL
from gateway.store.shared.grants import GrantsSQL
from gateway.store.shared.journal import HousekeepingSQL, JournalSQL
from gateway.store.shared.lifecycle import schema_version
from gateway.store.shared.push import ClaimsSQL, PushSQL
from gateway.store.shared.rules import RulesSQL

__all__ = ["Backend", "SQLStore", "Transaction", "Tx", "run_at_once"]


class SQLStore(
    ApprovalsSQL,
    EventsSQL,
    DeliveriesSQL,
    JobsSQL,
    JournalSQL,
    HousekeepingSQL,
    GrantsSQL,
    DelegationsSQL,
    RulesSQL,
    PushSQL,
    ClaimsSQL,
    AuditSQL,
):
    """Every shared port; a backend adds its `Backend` methods and what differs."""

    async def schema_version(self) -> int:
        return await self.read(schema_version)
