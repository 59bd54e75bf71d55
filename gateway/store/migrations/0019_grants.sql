-- migration: grants: standing grants a person added to an approve (gateway/core/grants.py)
-- A grant decides the later suspends it covers: the same agent namespace and step, the same
-- covered-args hash (all the args, or the policy's grant_fields), and for a "run" grant the same
-- run id, until expires_at or its revocation. `uses` and `last_used_at` count the suspends it
-- decided, in the same transaction as each (gateway/store/shared/approvals.py). Times are epoch
-- seconds; `fields` is a JSON list or NULL (all args).
CREATE TABLE grants (
    id           TEXT PRIMARY KEY,
    namespace    TEXT NOT NULL,
    step         TEXT NOT NULL,
    run_id       TEXT,
    fields       TEXT,
    args_hash    TEXT NOT NULL,
    duration     TEXT NOT NULL,
    granted_by   TEXT NOT NULL,
    person       TEXT,
    approval_id  TEXT NOT NULL,
    created_at   DOUBLE PRECISION NOT NULL,
    expires_at   DOUBLE PRECISION NOT NULL,
    revoked_at   DOUBLE PRECISION,
    revoked_by   TEXT,
    uses         INTEGER NOT NULL DEFAULT 0,
    last_used_at DOUBLE PRECISION
);
-- A suspend looks up the live grants of its namespace and step (one index walk).
CREATE INDEX grants_lookup ON grants (namespace, step, expires_at);
CREATE INDEX grants_created ON grants (created_at);
