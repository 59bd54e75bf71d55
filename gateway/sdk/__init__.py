"""The agent SDK, as the server package has always exported it: `hitl_sdk` (the `sdk/`
distribution, installable alone) plus what needs the gateway's store: `StoreJournal`, and
`DurableRun.open(..., db_url=...)` / `HITL_DB_URL`, which read and write the journal directly.

Public API (pinned by tests/unit/test_sdk_exports.py). See docs/worker-sdk.md.
"""

from __future__ import annotations

import hitl_sdk
from hitl_sdk import (
    Decision,
    GatewayClient,
    GatewayHTTPError,
    HttpJournal,
    Journal,
    Outcome,
    Source,
    StepTimeout,
    Suspended,
    TransientError,
    is_transient,
    verify_signature,
)

from gateway.core.principals import NO_AGENT, agent_namespace
from gateway.sdk.journal import StoreJournal


class DurableRun(hitl_sdk.DurableRun):
    """`hitl_sdk.DurableRun` whose `db_url` (or HITL_DB_URL) journal is the gateway's store."""

    @classmethod
    async def open_db_journal(cls, db_url: str, agent: str | None) -> Journal:
        namespace = NO_AGENT if not agent or agent.startswith("operator:") else agent_namespace(agent)
        return await StoreJournal.open(db_url, namespace=namespace)


__all__ = [
    "Decision",
    "DurableRun",
    "GatewayClient",
    "GatewayHTTPError",
    "HttpJournal",
    "Journal",
    "Outcome",
    "Source",
    "StepTimeout",
    "StoreJournal",
    "Suspended",
    "TransientError",
    "is_transient",
    "verify_signature",
]
