-- migration: traceparent: the W3C trace context an approval's suspend was made in
-- The suspend span's `traceparent` (version 00, 55 characters) and the caller's `tracestate`
-- (at most 512): the spans of the approval's cards, decision and resume job join that trace, and
-- its worker gets them as TRACEPARENT and TRACESTATE (gateway/core/traces.py). NULL: suspended
-- before this version, or with tracing off and no traceparent sent.
ALTER TABLE approvals ADD COLUMN traceparent TEXT;
ALTER TABLE approvals ADD COLUMN tracestate TEXT;
