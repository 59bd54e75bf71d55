"""The SDK's public API is pinned: changing it must be deliberate."""

from __future__ import annotations

import gateway.sdk


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
