"""The agent SDK: durable steps, suspend on an approval, resume in a worker.

Public API (pinned by tests/unit/test_sdk_exports.py): GatewayClient, DurableRun, Suspended,
TransientError, StepTimeout, GatewayHTTPError, Decision, Journal, StoreJournal, HttpJournal,
verify_signature. See docs/worker-sdk.md.
"""

from gateway.core.models import Decision, Outcome, Source
from gateway.jobs.launch import verify as verify_signature
from gateway.sdk.client import GatewayClient, GatewayHTTPError
from gateway.sdk.journal import HttpJournal, Journal, StoreJournal
from gateway.sdk.run import DurableRun, StepTimeout, Suspended, TransientError, is_transient

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
