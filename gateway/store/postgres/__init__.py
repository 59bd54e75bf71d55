"""PostgreSQL store, for several gateway replicas on one database: pool.py (connections and
what a lost server means), notify.py (LISTEN/NOTIFY wake-ups), store.py (the backend of the
shared use cases, gateway/store/shared/, and what PostgreSQL does its own way), writes.py (its
Tx), migrate.py. The SQL itself is in gateway/store/sql/."""

from gateway.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
