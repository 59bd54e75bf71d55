"""The store's use cases, written once over the named SQL (gateway/store/sql/) for both
backends: each port of gateway/store/base.py is one mixin here, over the narrow `Backend`
interface (backend.py: fetch one, fetch all, a transaction). sqlite/ and postgres/ subclass
`SQLStore` and add only what differs: the engine or pool, claims, notify, liveness,
migrations, and the three statements that read back what they wrote (`RETURNING`)."""

from gateway.store.shared.approvals import ApprovalsSQL, EventsSQL
from gateway.store.shared.audit import AuditSQL
from gateway.store.shared.backend import Backend, Transaction, Tx, run_at_once
from gateway.store.shared.deliveries import DeliveriesSQL, JobsSQL
from gateway.store.shared.journal import HousekeepingSQL, JournalSQL

__all__ = ["Backend", "SQLStore", "Transaction", "Tx", "run_at_once"]


class SQLStore(ApprovalsSQL, EventsSQL, DeliveriesSQL, JobsSQL, JournalSQL, HousekeepingSQL, AuditSQL):
    """Every shared port; a backend adds its `Backend` methods and what differs."""
