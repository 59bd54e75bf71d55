-- migration: delegations: a person lets another decide for them during a window
-- One row per delegation (gateway/core/delegation.py): `delegate` decides for `delegator` from
-- starts_at until ends_at, unless revoked. Identities are canonical; times are epoch seconds.
-- `uses` and `last_used_at` count the decisions made through it, each in its own transaction,
-- and only while it is in force (a revocation that committed first refuses the decision).
-- delegation_events is its audit trail, append-only by use: created, revoked, and used (each
-- decision made through it, naming the approval).
CREATE TABLE delegations (
    id          TEXT PRIMARY KEY,
    delegator   TEXT NOT NULL,
    delegate    TEXT NOT NULL,
    starts_at   DOUBLE PRECISION NOT NULL,
    ends_at     DOUBLE PRECISION NOT NULL,
    reason      TEXT,
    created_by  TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    revoked_at  DOUBLE PRECISION,
    revoked_by  TEXT,
    uses         INTEGER NOT NULL DEFAULT 0,
    last_used_at DOUBLE PRECISION
);
-- A decision looks up the delegations live at its time (few rows: people on holiday).
CREATE INDEX delegations_live ON delegations (ends_at);
CREATE INDEX delegations_to ON delegations (delegate, ends_at);  -- one person's, as a delegate
CREATE TABLE delegation_events (
    delegation_id TEXT NOT NULL,
    at            DOUBLE PRECISION NOT NULL,
    kind          TEXT NOT NULL,
    actor         TEXT NOT NULL,
    approval_id   TEXT
);
CREATE INDEX delegation_events_of ON delegation_events (delegation_id, at);
