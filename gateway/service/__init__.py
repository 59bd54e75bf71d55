"""The use cases. Handlers, the scheduler, the worker and the outbox are thin shells around them.

`approvals`: suspend, decide, cancel, apply_due, tokens, rehydrate. `presses`: what channels call
(a press, a reason, de-duplication). What the loops and operators call, each the only holder of
the store for its part: `deliveries` (the outbox; ResendCard), `jobs` (the worker; RetryJob),
`timers` (the scheduler), `housekeeping` (pruning), `journal` (the run journal; RecordStep,
StoreJournal), `maintenance` (the schema version), `ruleops` (the rules' dry run and report).
"""

from gateway.service.approvals import AlreadyDecided, Service, SuspendRequest, new_id
from gateway.service.presses import Inbound, Press, PressOutcome, PressResult, Reply

__all__ = [
    "AlreadyDecided",
    "Inbound",
    "Press",
    "PressOutcome",
    "PressResult",
    "Reply",
    "Service",
    "SuspendRequest",
    "new_id",
]
