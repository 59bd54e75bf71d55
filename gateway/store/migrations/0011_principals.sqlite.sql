-- migration: principals: approvals.agent, run owners, web sessions
-- The principal that created each approval (`agent`, NULL before: only operators see those);
-- who owns each run id (`runs`: the first agent to use it; '' for runs that existed before,
-- which no agent owns); and web sign-in sessions kept on the server, so that logout and
-- removing a user from the config end them (`id` is a hash of the cookie's session id).
-- SQLite: WITHOUT ROWID keeps `runs` in its primary-key B-tree alone (one insert per claim, not two).
ALTER TABLE approvals ADD COLUMN agent TEXT;
CREATE INDEX approvals_agent ON approvals (agent, created_at);
CREATE TABLE runs (
    run_id     TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
INSERT INTO runs (run_id, owner, created_at)
SELECT run_id, '', MIN(at) FROM (
    SELECT run_id, created_at AS at FROM approvals UNION ALL SELECT run_id, started_at AS at FROM journal
) known GROUP BY run_id;
CREATE TABLE web_sessions (
    id         TEXT PRIMARY KEY,
    user_name  TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_name);
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
