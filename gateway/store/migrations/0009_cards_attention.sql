-- migration: index of the cards that need an operator
-- The cards an operator must look at (a post failed for good, or its outcome is unknown), for
-- the dashboard, without scanning every card.
CREATE INDEX cards_attention ON cards (updated_at) WHERE status IN ('failed', 'uncertain');
