"""Who may run an operator's repair (retry a resume job, post a card again): one function.

The fronts name the caller by the identity they record: `operator:NAME` (an operator's API key,
or `operator:cli` for the command line, whose user holds the machine), `web:NAME` (an inbox
user, whose session the web front already checked for the approver role), `agent:NAME` (an
agent's API key). Agents never repair: they get a 403 `operator_required`.
"""

from __future__ import annotations

from gateway.core.errors import OperatorRequired

__all__ = ["authorize_repair"]


def authorize_repair(by: str, *, has_operators: bool) -> None:
    """Refuse an agent; `has_operators` (any `[security.operators]` key) picks the hint."""
    if not by.startswith("agent:"):
        return
    if not has_operators:
        raise OperatorRequired(
            "deciding, cancelling, retrying and re-posting through the API need an operator key, and none is"
            " configured: add one under [security.operators] (agent keys can never decide)"
        )
    raise OperatorRequired(
        f"deciding, cancelling, retrying and re-posting need an operator key (security.operators); this key is {by}"
    )
