-- migration: index for coalescing a card's pending sync
-- The pending, unclaimed SYNC of a card, looked up by every queued sync (coalescing). Without
-- it Postgres scanned every pending outbox row per insert: a timeout storm of 10^4 spent 4.2 s
-- there, and 2x10^4 took 3.6x as long.
CREATE INDEX outbox_pending_sync ON outbox (approval_id, channel)
    WHERE kind = 'sync' AND status = 'pending' AND lease_owner IS NULL;
