"""The HTTP API's contract, written once: the request and response models, their validation
(a 400 naming the field) and their JSON Schemas.

`gateway.http.schemas` turns validated bodies into the service's inputs, `gateway.http.openapi`
serves the schemas, `gateway.http.reference` writes docs/reference/http.md from them, and
tests/unit/test_api_contract.py holds the SDK's `suspend` and the MCP tool to them. This package
imports only `gateway.core` (and pydantic).
"""

from gateway.contract.requests import (
    BATCH_ITEMS,
    REQUESTS,
    BatchDecisionBody,
    CancelBody,
    DecisionBody,
    DecisionItem,
    DelegationBody,
    EvaluateBody,
    EventsResendBody,
    ExtendBody,
    InlinePolicy,
    RequestBody,
    ResendBody,
    StepBody,
    SuspendBody,
    TokenDecisionBody,
)
from gateway.contract.responses import (
    RESPONSES,
    ApprovalView,
    BatchDecisionReply,
    ErrorReply,
    EventList,
    EventView,
    RuleResultView,
    StepView,
    SuspendReply,
)
from gateway.contract.schema import components, ref
from gateway.contract.wording import allowed, validate

__all__ = [
    "BATCH_ITEMS",
    "REQUESTS",
    "RESPONSES",
    "ApprovalView",
    "BatchDecisionBody",
    "BatchDecisionReply",
    "CancelBody",
    "DecisionBody",
    "DecisionItem",
    "DelegationBody",
    "ErrorReply",
    "EvaluateBody",
    "EventList",
    "EventView",
    "EventsResendBody",
    "ExtendBody",
    "InlinePolicy",
    "RequestBody",
    "ResendBody",
    "RuleResultView",
    "StepBody",
    "StepView",
    "SuspendBody",
    "SuspendReply",
    "TokenDecisionBody",
    "allowed",
    "components",
    "ref",
    "validate",
]
