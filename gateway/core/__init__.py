"""The domain core: records, pure rules, errors, time, keys, redaction, sealing and tokens.

Nothing here does I/O; everything above (service, delivery, jobs, sla, store, http) uses it.
"""
