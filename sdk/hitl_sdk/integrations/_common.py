"""What the integrations share: the gate's settings, and a framework's output made JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from hitl_sdk.pause import EditTerms, Pause, PendingCall, default_title
from hitl_sdk.run import DurableRun


def jsonable(value: Any) -> Any:
    """A framework's result as JSON for the journal: Pydantic models (LangChain messages too)
    by `model_dump`, anything else unknown as its `str`."""

    def default(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        return dump(mode="json") if callable(dump) else str(obj)

    return json.loads(json.dumps(value, default=default))


class Gate:
    """The base of each framework's gate: its `Pause` (worker, channels, approvers, policy,
    title), and `output`, which turns the framework's final result into the JSON that the run's
    journal keeps (default: `jsonable`).

    `args_schema` and `editable` are per tool name, for the suspend of each call of that tool:
    `editable={"pay_invoice": ["amount"]}` lets an approver change `amount` before approving,
    `args_schema={"pay_invoice": {...}}` is the JSON Schema that the call's args and every edit
    must validate. How an edit reaches the framework is each integration's (docs/integrations.md)."""

    def __init__(
        self,
        run: DurableRun,
        *,
        worker: str,
        channels: Sequence[str] = ("web",),
        approvers: Sequence[str] = (),
        policy: str | dict[str, Any] | None = None,
        title: Callable[[PendingCall], str] = default_title,
        output: Callable[[Any], Any] = jsonable,
        args_schema: EditTerms | None = None,
        editable: EditTerms | None = None,
    ) -> None:
        self.run, self.output = run, output
        self.pause = Pause(
            run,
            worker=worker,
            channels=channels,
            approvers=approvers,
            policy=policy,
            title=title,
            args_schema=args_schema,
            editable=editable,
        )
