"""The SDK's public API is pinned: changing it must be deliberate."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import hitl_sdk

import gateway.sdk
from gateway.core import models


def test_public_api_is_pinned() -> None:
    assert sorted(gateway.sdk.__all__) == [
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
    for name in gateway.sdk.__all__:
        assert getattr(gateway.sdk, name).__doc__, name


def test_the_agent_sdk_api_is_pinned() -> None:
    assert sorted(hitl_sdk.__all__) == [
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
    for name in hitl_sdk.__all__:
        assert getattr(hitl_sdk, name).__doc__, name


def test_gateway_sdk_is_the_agent_sdk() -> None:
    """One class each: a decision the store wrote is the SDK's own type, and `is` comparisons of
    outcomes hold across both import paths."""
    assert gateway.sdk.Decision is hitl_sdk.Decision is models.Decision
    assert gateway.sdk.Outcome is hitl_sdk.Outcome is models.Outcome
    assert issubclass(gateway.sdk.DurableRun, hitl_sdk.DurableRun)
    assert gateway.sdk.verify_signature is hitl_sdk.verify_signature


def test_decisions_carry_edits_only_when_made() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    plain = hitl_sdk.Decision(hitl_sdk.Outcome.APPROVE, "telegram:1", now)
    assert sorted(plain.to_json()) == ["channel", "comment", "decided_at", "decided_by", "outcome", "reason", "source"]
    assert plain.edited_args is None
    patch = [{"op": "replace", "path": "/amount", "value": 1}]
    edited = hitl_sdk.Decision(
        hitl_sdk.Outcome.APPROVE, "telegram:1", now, args={"amount": 1}, original_args={"amount": 2}, patch=patch
    )
    again = hitl_sdk.Decision.from_api(edited.to_api())
    assert again == edited and again.edited_args == {"amount": 1}
    assert replace(edited, outcome=hitl_sdk.Outcome.REJECT).edited_args is None
