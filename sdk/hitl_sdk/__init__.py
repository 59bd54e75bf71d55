"""hitl_sdk: the agent side of hitl-gateway, installable alone (`pip install ./sdk`).

Durable steps and suspend/resume (`DurableRun`), the HTTP client (`GatewayClient`), the journal
over HTTP (`HttpJournal`), the `url`-worker signature check (`verify_signature`), and the
framework integrations in `hitl_sdk.integrations` (extras `langgraph`, `openai-agents`,
`pydantic-ai`, `claude-agent-sdk`). Public API pinned by tests/unit/test_sdk_exports.py.
"""

from hitl_sdk.client import GatewayClient, GatewayHTTPError
from hitl_sdk.journal import HttpJournal, Journal
from hitl_sdk.models import Decision, Outcome, Source, StepRecord, StepStatus
from hitl_sdk.pause import Pause, PendingCall, Resumed, UnsupportedRequest, Waiting
from hitl_sdk.run import DurableRun, StepTimeout, Suspended, TransientError, is_transient
from hitl_sdk.signature import verify as verify_signature

__version__ = "0.1.0"

__all__ = [
    "Decision",
    "DurableRun",
    "GatewayClient",
    "GatewayHTTPError",
    "HttpJournal",
    "Journal",
    "Outcome",
    "Pause",
    "PendingCall",
    "Resumed",
    "Source",
    "StepRecord",
    "StepStatus",
    "StepTimeout",
    "Suspended",
    "TransientError",
    "UnsupportedRequest",
    "Waiting",
    "is_transient",
    "verify_signature",
]
