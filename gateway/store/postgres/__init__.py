"""PostgreSQL store, for several gateway replicas on one database: pool.py (connections and
what a lost server means), notify.py (LISTEN/NOTIFY wake-ups), store.py (the backend of the
shared use cases, gateway/store/shared/, and its claims), writes.py (its Tx), liveness.py and
handover.py (failover), migrate.py. The SQL itself is in gateway/store/sql/."""

from gateway.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
