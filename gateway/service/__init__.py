"""The use cases. Handlers, the scheduler, the worker and the outbox are thin shells around them."""

from gateway.service.approvals import AlreadyDecided, Hooks, Service, SuspendRequest, new_id

__all__ = ["AlreadyDecided", "Hooks", "Service", "SuspendRequest", "new_id"]
