"""The Temporal workflow of a cycle: activity `post_card`, `wait_condition` on the signal `press`,
activity `step`. Only temporalio is imported here: the worker re-imports this module in its
workflow sandbox (the default runner, as a user gets it), and the activities are named, not imported."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

TIMEOUT = timedelta(seconds=60)


@workflow.defn(name="Cycle")
class CycleWorkflow:
    def __init__(self) -> None:
        self.pressed: str | None = None

    @workflow.signal(name="press")
    def press(self, data: str) -> None:
        self.pressed = data

    @workflow.run
    async def run(self, job: dict[str, Any]) -> None:
        await workflow.execute_activity("post_card", job, start_to_close_timeout=TIMEOUT)
        await workflow.wait_condition(lambda: self.pressed is not None)
        if self.pressed != f"a|{job['id']}|ok":  # the button of this workflow's own card only
            raise ApplicationError("press of another card", non_retryable=True)
        await workflow.execute_activity("step", job, start_to_close_timeout=TIMEOUT)
