"""Pure retry arithmetic (defined once, in the agent SDK `hitl_sdk`: its steps retry the same way)."""

from hitl_sdk.retry import backoff

__all__ = ["backoff"]
