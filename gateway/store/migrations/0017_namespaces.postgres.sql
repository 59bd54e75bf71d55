-- migration: namespaces: run ids and idempotency keys per agent
-- Run ids and idempotency keys are unique per agent, not globally: another agent's id or key is
-- simply its own, so that neither reveals (by a 404 or a 409) that the first exists, nor can be
-- taken first to make the other's suspends fail. `namespace` is the creating agent's identity
-- ('agent:NAME'), or '' for no agent: operators, in-process callers, and what an agent did not
-- create before principals existed (migration 11). A journal row takes the namespace of its
-- run's owner (`runs`, which the namespace replaces).
ALTER TABLE approvals ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE approvals SET namespace = agent WHERE agent LIKE 'agent:%';
ALTER TABLE approvals DROP CONSTRAINT approvals_idempotency_key_key;
CREATE UNIQUE INDEX approvals_key ON approvals (namespace, idempotency_key);
ALTER TABLE journal ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE journal j SET namespace = r.owner FROM runs r WHERE r.run_id = j.run_id AND r.owner <> '';
ALTER TABLE journal DROP CONSTRAINT journal_pkey;
ALTER TABLE journal ADD PRIMARY KEY (run_id, namespace, name);
DROP TABLE runs;
