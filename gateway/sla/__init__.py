"""Time-driven work: the SLA scheduler (deadlines, escalations, reminders) and housekeeping."""
