-- migration: replica liveness
-- The gateways that claim work on this database, each proved alive by PostgreSQL: it holds the
-- session advisory lock (replica_class, lock_key) for as long as its connection lives, and
-- renews seen_at (database time, epoch seconds) every half second. A replica whose lock is free
-- and whose seen_at is stale is gone: any other replica releases its claims at once
-- (postgres/liveness.py) instead of waiting out store.lease. SQLite has one serving process
-- per file (a file lock proves it) and keeps the table empty.
CREATE TABLE replicas (
    owner TEXT PRIMARY KEY,
    lock_key INTEGER NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
