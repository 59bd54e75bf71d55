-- migration: budget decided: the rules' budgets count a step from when it went ahead
-- spent() and count() read the approvals an agent had decided to go ahead (approved, or approved
-- at the deadline) within the window, by the decision's own time: an approval a person (or the
-- clock) decided long after it was asked for was spent when decided, not when asked for. One
-- walk of this index per budget (gateway/store/sql/*.sql budget_count, budget_spent); it
-- replaces the index by creation time.
DROP INDEX approvals_budget;
CREATE INDEX approvals_budget_decided ON approvals (namespace, ((decision::jsonb ->> 'decided_at')::double precision))
    WHERE status IN ('approved', 'timed_out');
