-- migration: audit heads from the events (SQLite)
-- SQLite has one writer, so its event ids are commit order: an approval's head is its last
-- event (index events_approval), and the next checkpoint seals the approvals with an event
-- after audit_seal.events_upto, the highest event id the last checkpoint saw. That replaces the
-- head row each event rewrote (migration 13), which cost every suspend two more B-tree pages
-- in the WAL (the table and its partial index: 8.3 -> 11.4 KB written per suspend). The
-- watermark starts below the first event that no checkpoint has sealed yet, so the first
-- checkpoint after this migration seals every head that moved (one sealed again is harmless:
-- the same leaf). PostgreSQL keeps its head rows: there, sequence order is not commit order.
CREATE TABLE audit_seal (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    events_upto INTEGER NOT NULL
);
INSERT INTO audit_seal (id, events_upto)
SELECT 1, COALESCE(
    (SELECT MIN(e.id) - 1 FROM audit_heads h
     JOIN events e ON e.approval_id = h.approval_id AND e.seq = h.sealed_seq + 1
     WHERE h.seq > h.sealed_seq),
    (SELECT MAX(id) FROM events),
    0
);
DROP TABLE audit_heads;
