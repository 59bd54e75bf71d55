-- migration: edits: args schema, proposals, extensions
-- What a suspend lets approvers edit (`terms`: {"schema", "editable"} as JSON, NULL when it gave
-- neither), the edited args the current round of votes is on (`proposal`, JSON, redacted: the raw
-- ones are sealed with the original args), and how many times the deadline was extended.
ALTER TABLE approvals ADD COLUMN terms TEXT;
ALTER TABLE approvals ADD COLUMN proposal TEXT;
ALTER TABLE approvals ADD COLUMN extensions INTEGER NOT NULL DEFAULT 0;
