-- migration: budgets: what the rules' spent() and count() read
-- The approvals an agent had approved (by a person or a rule) since an instant: one index walk
-- per budget, inside the suspend's transaction (gateway/store/shared/approvals.py).
CREATE INDEX approvals_budget ON approvals (namespace, status, created_at);
