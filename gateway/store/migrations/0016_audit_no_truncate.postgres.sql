-- migration: audit_no_truncate
-- TRUNCATE fires no row trigger: without these, emptying events, checkpoints or leaves needed
-- no trigger dropped. The same function refuses it (a statement trigger may not return a row).
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
CREATE TRIGGER audit_leaves_no_truncate BEFORE TRUNCATE ON audit_leaves
FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
