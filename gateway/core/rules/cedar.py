"""Cedar policies (`rules.engine = "cedar"`, the extra `cedar`), evaluated in-process by cedarpy.

The request: principal `Agent::"NAME"`, action `Action::"STEP"`, resource `Approval::"RUN_ID"`,
and the suspend's args as the context. Cedar denies by default, so its Deny is split by the
policies that decided it: a matching `forbid` is *deny*, no matching policy at all is *ask*
(a person decides). A matching `permit` (with no forbid) is *allow*.

A policy's name is its `@id("...")` annotation (else Cedar's `policyN`), its reason its
`@reason("...")` annotation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.core.errors import ConfigError

EXTRA_HINT = "rules.engine = \"cedar\" needs the extra `cedar`: pip install ./sdk '.[cedar]' from the checkout"


def _library() -> Any:
    try:
        import cedarpy
    except ImportError:
        raise ConfigError("rules.engine", EXTRA_HINT) from None
    return cedarpy


@dataclass(frozen=True, slots=True)
class CedarAnswer:
    effect: str  # "permit" | "forbid" | "" (no policy decided)
    policies: tuple[str, ...]  # the names of the deciding policies
    reason: str
    errors: tuple[str, ...]


class CedarPolicies:
    """A parsed Cedar policy set, and the name and effect of each of its policies."""

    def __init__(self, text: str) -> None:
        cedar = self._cedar = _library()
        try:
            self._set = cedar.PolicySet.from_str(text)
            static = json.loads(cedar.policies_to_json_str(text)).get("staticPolicies", {})
        except ValueError as exc:
            raise ConfigError("rules.cedar", " ".join(str(exc).split())) from None
        if not static:
            raise ConfigError("rules.cedar", "no policy")
        self.ids = {pid: str(p.get("annotations", {}).get("id", pid)) for pid, p in static.items()}
        self.reasons = {pid: str(p.get("annotations", {}).get("reason", "")) for pid, p in static.items()}
        self.effects = {pid: str(p.get("effect", "")) for pid, p in static.items()}

    def decide(self, agent: str, step: str, run_id: str, args: Mapping[str, Any]) -> CedarAnswer:
        # Entity uids as {"type", "id"}, never surface syntax: a JSON-escaped `Action::"chargé"`
        # (`\u00e9`) or an id with a newline is not a uid Cedar parses, so the request failed
        # to build and no policy ran, a forbid included.
        request = {
            "principal": {"type": "Agent", "id": agent},
            "action": {"type": "Action", "id": step},
            "resource": {"type": "Approval", "id": run_id},
            "context": dict(args),
        }
        result = self._cedar.is_authorized(request, self._set, [])
        deciding = tuple(result.diagnostics.reasons)
        errors = tuple(" ".join(str(e).split()) for e in result.diagnostics.errors)
        effects = {self.effects.get(pid, "") for pid in deciding}
        effect = "forbid" if "forbid" in effects else "permit" if result.allowed else ""
        chosen = tuple(pid for pid in deciding if self.effects.get(pid) == effect)
        reason = next((self.reasons[pid] for pid in chosen if self.reasons.get(pid)), "")
        return CedarAnswer(effect, tuple(self.ids.get(pid, pid) for pid in chosen), reason, errors)


__all__ = ["EXTRA_HINT", "CedarAnswer", "CedarPolicies"]
