"""What a suspend lets approvers change (`EditTerms`), and the edited args a round of votes is on
(`Proposal`): frozen records, stored as JSON (gateway.store.rows); the rules are gateway.core.edits
and gateway.core.rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["EditTerms", "Proposal"]


@dataclass(frozen=True, slots=True)
class EditTerms:
    """What a suspend lets the approvers change: `schema` (JSON Schema 2020-12) that the args,
    and every edit of them, must validate against; `editable`, True (any top-level arg) or the
    names of the top-level args that may change (gateway.core.edits checks an edit)."""

    schema: dict[str, Any] | None = None
    editable: bool | tuple[str, ...] = False

    @property
    def allows_edits(self) -> bool:
        return bool(self.editable)

    def may_change(self, name: str) -> bool:
        return self.editable is True or (isinstance(self.editable, tuple) and name in self.editable)

    def to_json(self) -> dict[str, Any]:
        editable = self.editable if isinstance(self.editable, bool) else list(self.editable)
        return {"schema": self.schema, "editable": editable}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EditTerms:
        editable = d.get("editable", False)
        return cls(d.get("schema"), editable if isinstance(editable, bool) else tuple(editable))


@dataclass(frozen=True, slots=True)
class Proposal:
    """Args an approver changed, waiting for the quorum (a round of votes on these args). `args`
    and `patch` (RFC 6902, from the original args) are redacted like the approval's args; the raw
    ones are sealed with them (`Approval.sealed`). `args_hash` is the hash of the raw args;
    `round` counts the edits (the original args are round 0)."""

    args: dict[str, Any]
    patch: list[dict[str, Any]]
    by: str
    round: int
    args_hash: str
    name: str | None = None  # how the editor is shown (the person, or the platform's name)

    @property
    def shown_as(self) -> str:
        return self.name or self.by

    def to_json(self) -> dict[str, Any]:
        out = {"args": self.args, "patch": self.patch, "by": self.by, "round": self.round, "args_hash": self.args_hash}
        return out | ({"name": self.name} if self.name else {})

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Proposal:
        return cls(d["args"], d["patch"], d["by"], int(d["round"]), d["args_hash"], d.get("name"))
