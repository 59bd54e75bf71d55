-- migration: job claims: a count of a resume job's claims that nothing resets
-- Renewing a claim's lease and recording its outcome are fenced by the claim: its owner and this
-- count (gateway/jobs/worker.py). `attempts` could not serve: an operator's retry resets it, so a
-- runner's stale task from before the retry could pass for that runner's later claim.
ALTER TABLE resume_jobs ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;
