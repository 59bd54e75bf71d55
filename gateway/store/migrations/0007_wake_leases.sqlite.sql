-- migration: wake-up leases for several replicas
-- A lease on an approval's wake-up, so that one replica's scheduler applies each due deadline
-- or reminder (Store.claim_due); save_transition clears it. SQLite adds one column per ALTER.
ALTER TABLE approvals ADD COLUMN wake_owner TEXT;
ALTER TABLE approvals ADD COLUMN wake_lease_until REAL;
