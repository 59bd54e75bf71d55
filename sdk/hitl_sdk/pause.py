"""A framework's pause as gateway approvals: one approval per paused call, one resume.

A framework (LangGraph, the OpenAI Agents SDK, Pydantic AI) stops on N tool calls at once and
hands back its serialized state. `Pause.suspend` makes one approval per call; each carries the
state (sealed by the gateway) and the list of its siblings. Every decided approval runs the
worker once. In the worker, `Pause.collect`:

1. journals this approval's decision (step `<tool>:<key>`, first record wins);
2. reads the journal: if a sibling's decision is not there yet, raises `Waiting` (that sibling's
   own worker comes later and finds this one's);
3. claims the resume (step `resume-claim:<pause>`, first record wins): only the claimant gets the
   decisions, every other worker gets `Waiting`. A worker that gets `Waiting` exits 0.

Each worker writes its decision before it reads the others', so of two workers deciding last at
the same moment at least one sees every decision, and the claim leaves exactly one. The
claimant's retries (a crash, a kill -9) find their own claim and go on. `Pause.complete` then
runs the framework's resume as a journaled step: once it succeeded, a replay returns its output.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from hitl_sdk.keys import canonical_json
from hitl_sdk.models import Decision, StepStatus
from hitl_sdk.run import DurableRun, Suspended

__all__ = [
    "EditTerms",
    "Pause",
    "PendingCall",
    "Resumed",
    "UnsupportedRequest",
    "Waiting",
    "edit_terms",
    "rejection_for_edit",
]

_TITLE_MAX = 300  # the gateway's limits for a title and a step name
_TOOL_MAX = 80


class Waiting(Exception):
    """Nothing for this worker to do: another approval of the pause is undecided, or another
    worker resumes the run. Its process should exit 0."""


class UnsupportedRequest(ValueError):
    """A framework's pause that cannot be an approval (it could not be approved or rejected)."""


def rejection_for_edit(tool: str, edited: dict[str, Any]) -> str:
    """The rejection message for an approval with edited arguments that the framework cannot
    run: the original call must not run (nobody approved it), so it is refused, and the model is
    told what the approver would have run instead."""
    return (
        f"The reviewer did not approve this call of {tool} as it was; they approved it with these"
        f" arguments instead: {canonical_json(edited)}. It was not run."
    )


@dataclass(frozen=True, slots=True)
class PendingCall:
    """One paused tool call, to become one approval. `key`: the framework's id for it, unique
    within the pause; `meta`: what the integration needs to answer it (kept in sealed state)."""

    key: str
    tool: str
    args: dict[str, Any]
    description: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def step(self) -> str:
        return f"{self.tool[:_TOOL_MAX]}:{self.key}"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "tool": self.tool,
            "args": self.args,
            "description": self.description,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PendingCall:
        return cls(
            str(d["key"]), str(d["tool"]), dict(d["args"]), str(d.get("description", "")), dict(d.get("meta", {}))
        )


@dataclass(frozen=True, slots=True)
class Resumed:
    """What the worker that owns the resume gets: every call, its decision, the framework state."""

    pause_id: str
    calls: tuple[PendingCall, ...]
    decisions: dict[str, Decision]
    state: Any

    def decision(self, call: PendingCall) -> Decision:
        return self.decisions[call.key]


EditTerms = Mapping[str, Any]
"""Per tool name: `args_schema` (a JSON Schema) or `editable` (True, or the top-level args an
approver may change), as the gate's constructor takes them."""


def edit_terms(name: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    """A gate's per-tool `args_schema` or `editable`, checked: a mapping of tool name to a JSON
    Schema object (`args_schema`) or to True/False/a list of arg names (`editable`)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}: a mapping of tool name to its {name} (e.g. {{'pay_invoice': ...}})")
    out: dict[str, Any] = {}
    for tool, terms in value.items():
        if not isinstance(tool, str) or not tool:
            raise TypeError(f"{name}: the keys are tool names, got {tool!r}")
        if name == "args_schema" and not isinstance(terms, Mapping):
            raise TypeError(f"args_schema[{tool!r}]: a JSON Schema object, got {type(terms).__name__}")
        if name == "editable":
            if isinstance(terms, str) or not (
                isinstance(terms, bool) or (isinstance(terms, Sequence) and all(isinstance(t, str) for t in terms))
            ):
                raise TypeError(f"editable[{tool!r}]: True, or a list of the arg names an approver may change")
            terms = terms if isinstance(terms, bool) else list(terms)
        out[tool] = dict(terms) if isinstance(terms, Mapping) else terms
    return out


def pause_id(keys: Sequence[str]) -> str:
    """The same pause gives the same id (the calls' keys, in any order)."""
    return hashlib.sha256(canonical_json(sorted(keys)).encode()).hexdigest()[:16]


def default_title(call: PendingCall) -> str:
    args = ", ".join(f"{k}={canonical_json(v)}" for k, v in call.args.items())
    return f"{call.tool}({args})"[:_TITLE_MAX]


class Pause:
    """Suspend a run on several calls at once, and collect their decisions in the worker.

    `worker` names the gateway's `[workers.NAME]` that resumes the run; `channels`, `approvers`
    and `policy` are as for `DurableRun.approval`. `title(call)` words each card (default:
    `tool(arg=value, ...)`); the call's description becomes the card's summary. `args_schema`
    and `editable`, by tool name, go to the suspend of each call of that tool (an approver may
    then approve with changed args: the gateway checks them against both)."""

    def __init__(
        self,
        run: DurableRun,
        *,
        worker: str,
        channels: Sequence[str] = ("web",),
        approvers: Sequence[str] = (),
        policy: str | dict[str, Any] | None = None,
        title: Callable[[PendingCall], str] = default_title,
        args_schema: EditTerms | None = None,
        editable: EditTerms | None = None,
    ) -> None:
        self.run, self.worker = run, worker
        self.channels, self.approvers, self.policy = tuple(channels), tuple(approvers), policy
        self.title = title
        self.args_schema = edit_terms("args_schema", args_schema)
        self.editable = edit_terms("editable", editable)

    def editable_for(self, tool: str) -> bool | list[str]:
        """What an approver may change in a call of `tool` (False: nothing)."""
        terms: bool | list[str] = self.editable.get(tool, False)
        return terms

    def claim_step(self) -> str:
        """The journal step that claims the pause this run makes now: `pause:start` in the
        agent's own run; inside a worker, `pause:after:<pause>` (the pause it resumes) or
        `pause:after-approval:<id>` (a plain approval's worker). The same on every re-run."""
        doc = self.run.document
        if doc is None:
            return "pause:start"
        state = doc.get("state")
        if isinstance(state, Mapping) and isinstance(state.get("hitl_pause"), Mapping):
            return f"pause:after:{state['hitl_pause']['pause']}"
        return f"pause:after-approval:{doc['approval']['id']}"

    async def suspend(self, calls: Sequence[PendingCall], state: Any) -> NoReturn:
        """One approval per call, then `Suspended`. Idempotent: the first run to get here
        journals its calls and state (`claim_step`), and every re-run suspends on those, so it
        finds the same approvals even when the framework gave the calls new ids."""
        if not calls:
            raise ValueError("a pause needs at least one call")
        keys = [c.key for c in calls]
        if len(set(keys)) != len(keys):
            raise ValueError(f"the paused calls' keys are not unique: {keys}")
        recorded = await self.run.mark(self.claim_step(), {"calls": [c.to_json() for c in calls], "state": state})
        calls = [PendingCall.from_json(c) for c in recorded["calls"]]
        state = recorded["state"]
        shared = {"pause": pause_id([c.key for c in calls]), "calls": [c.to_json() for c in calls]}
        ids: list[str] = []
        for call in calls:
            body = await self.run.request_approval(
                call.step,
                title=self.title(call)[:_TITLE_MAX],
                summary=call.description,
                args=call.args,
                state={"hitl_pause": {**shared, "key": call.key}, "framework": state},
                channels=self.channels,
                approvers=self.approvers,
                policy=self.policy,
                worker=self.worker,
                args_schema=self.args_schema.get(call.tool),
                editable=self.editable_for(call.tool),
            )
            ids.append(str(body["id"]))
        raise Suspended(ids[0], approval_ids=ids)

    async def collect(self) -> Resumed:
        """In the worker: every decision of the pause, if this worker owns its resume; else
        `Waiting` (a sibling is undecided, or another worker resumes)."""
        doc = self.run.document
        if doc is None or not isinstance(doc.get("state"), Mapping) or "hitl_pause" not in doc["state"]:
            raise ValueError("not a worker of a paused framework run: the document has no state.hitl_pause")
        if not doc.get("decision"):
            raise ValueError(f"approval {doc['approval']['id']} has no decision yet")
        info, state = doc["state"]["hitl_pause"], doc["state"]["framework"]
        calls = tuple(PendingCall.from_json(c) for c in info["calls"])
        mine = next(c for c in calls if c.key == info["key"])
        await self.run.record_decision(mine.step, Decision.from_api(doc["decision"]))
        steps = await self.run.refresh()
        decisions: dict[str, Decision] = {}
        for call in calls:
            record = steps.get(call.step)
            if record is None or record.status is not StepStatus.SUCCEEDED:
                raise Waiting(f"waiting for the decision on {call.step}")
            decisions[call.key] = Decision.from_json(record.output)
        me = str(doc["approval"]["id"])
        owner = await self.run.mark(f"resume-claim:{info['pause']}", {"approval_id": me})
        if owner.get("approval_id") != me:
            raise Waiting(f"approval {owner.get('approval_id')} resumes this run")
        return Resumed(str(info["pause"]), calls, decisions, state)

    async def complete(self, resumed: Resumed, resume: Callable[[], Awaitable[Any]]) -> Any:
        """Run the framework's resume once (a journaled step): its JSON result, or `Suspended`
        again when the framework paused anew (the new approvals were made inside `resume`)."""

        async def body() -> dict[str, Any]:
            try:
                return {"result": await resume()}
            except Suspended as again:
                return {"suspended": list(again.approval_ids)}

        out = await self.run.step(f"resumed:{resumed.pause_id}", body)
        if "suspended" in out:
            raise Suspended(out["suspended"][0], approval_ids=out["suspended"])
        return out["result"]
