-- migration: audit_no_truncate
-- SQLite has no TRUNCATE (a DELETE fires the row triggers of migrations 1 and 13): nothing to add.
SELECT 1;
