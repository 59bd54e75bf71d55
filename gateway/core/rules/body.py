"""The facts of a request body: a suspend body plus `agent` (`rules test FILE`, and what
`POST /v1/rules/evaluate` will read). Bad input is a ValidationError naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.errors import ValidationError
from gateway.core.principals import NAME_RE, NAME_RULE
from gateway.core.rules.model import Facts


def facts_from_body(body: Any, agent: str | None = None) -> Facts:
    """Facts from a suspend body. `agent` (a name, or `agent:NAME`) is the body's unless given:
    the caller's own identity wins when the caller is an agent."""
    if not isinstance(body, Mapping):
        raise ValidationError("body", "expected a JSON object")
    name = agent if agent is not None else body.get("agent")
    if not isinstance(name, str) or not NAME_RE.match(name.removeprefix("agent:")):
        raise ValidationError("agent", f"an agent name is {NAME_RULE}")
    step = body.get("step")
    if not isinstance(step, str) or not step:
        raise ValidationError("step", "expected a non-empty string")
    run_id = body.get("run_id", "")
    if not isinstance(run_id, str):
        raise ValidationError("run_id", "expected a string")
    return Facts(
        agent=name.removeprefix("agent:").lower(),
        step=step,
        run_id=run_id,
        args=_object(body, "args"),
        context=_object(body, "context"),
    )


def _object(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(key, "expected a JSON object")
    return value


__all__ = ["facts_from_body"]
