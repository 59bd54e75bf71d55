-- migration: audit: hash-chained events, signed checkpoints, code versions
-- Each event's place in its approval's chain (seq from 1) and its hash (gateway/core/audit.py),
-- written in the event's own transaction; events from before this version keep NULL (not
-- covered). audit_heads: each approval's latest (seq, hash), locked to extend the chain (one row
-- per approval: replicas never wait for each other's approvals) and sealed by the next
-- checkpoint (seq > sealed_seq: moved since). audit_checkpoints and audit_leaves: the signed
-- global chain, append-only like the events. approvals.code_version: the agent code that
-- suspended (versioned resumes).
ALTER TABLE events ADD COLUMN seq INTEGER;
ALTER TABLE events ADD COLUMN hash TEXT;
ALTER TABLE approvals ADD COLUMN code_version TEXT;
CREATE TABLE audit_heads (
    approval_id TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL,
    hash        TEXT NOT NULL,
    sealed_seq  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX audit_heads_unsealed ON audit_heads (approval_id) WHERE seq > sealed_seq;
-- Every approval from before this version gets a head at seq 0 (no chained event yet), so that a
-- writer always finds a head row to lock, even for an approval whose events started earlier.
INSERT INTO audit_heads (approval_id, seq, hash, sealed_seq)
SELECT id, 0, '0000000000000000000000000000000000000000000000000000000000000000', 0 FROM approvals;
CREATE TABLE audit_checkpoints (
    seq       INTEGER PRIMARY KEY,
    at        DOUBLE PRECISION NOT NULL,
    prev      TEXT NOT NULL,
    root      TEXT NOT NULL,
    heads     INTEGER NOT NULL,
    hash      TEXT NOT NULL,
    signature TEXT,
    key_id    TEXT
);
CREATE TABLE audit_leaves (
    checkpoint  INTEGER NOT NULL,
    approval_id TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (checkpoint, approval_id)
);
CREATE INDEX audit_leaves_approval ON audit_leaves (approval_id);
CREATE TRIGGER audit_checkpoints_append_only BEFORE UPDATE OR DELETE ON audit_checkpoints
FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER audit_leaves_append_only BEFORE UPDATE OR DELETE ON audit_leaves
FOR EACH ROW EXECUTE FUNCTION events_append_only();
