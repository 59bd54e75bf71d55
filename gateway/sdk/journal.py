"""The journal in the gateway's store, opened directly (same DB URL): for agents on the gateway's
machine. It needs the server's store, so it lives in the application layer
(gateway.service.journal) and not in the agent SDK (`hitl_sdk`); this module keeps its old name."""

from __future__ import annotations

from gateway.service.journal import StoreJournal

__all__ = ["StoreJournal"]
