"""Canonical JSON and deterministic idempotency keys (defined once, in the agent SDK `hitl_sdk`)."""

from hitl_sdk.keys import args_hash, canonical_json, idempotency_key

__all__ = ["args_hash", "canonical_json", "idempotency_key"]
