-- migration: index for pruning inbound de-duplication marks
-- Inbound de-duplication marks are pruned by age (gateway/sla/housekeeping.py).
CREATE INDEX inbound_at ON inbound (at);
