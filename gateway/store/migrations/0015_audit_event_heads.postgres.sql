-- migration: audit heads from the events (SQLite)
-- Nothing changes on PostgreSQL: replicas insert events concurrently and sequence order is not
-- commit order, so each approval keeps its head row, locked by the writer that extends it
-- (migration 13). The SQLite file of this version says why SQLite no longer needs one.
SELECT 1;
