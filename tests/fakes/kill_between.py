"""Run a module, SIGKILLing it between an effect and its journal entry:
`python kill_between.py MARKS PREFIX -m module args...`.

The first time (per approval, counted with marker files in MARKS) that the run journals a
successful step whose name starts with PREFIX, the process kills itself with SIGKILL just before
the journal write: the step's effect happened, its journal entry did not."""

from __future__ import annotations

import os
import runpy
import signal
import sys
from pathlib import Path
from typing import Any

from hitl_sdk.journal import HttpJournal
from hitl_sdk.models import StepRecord, StepStatus

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for `examples`
marks, prefix, module = Path(sys.argv[1]), sys.argv[2], sys.argv[4]
mark = marks / os.environ["HITL_APPROVAL_ID"]
record = HttpJournal.record


async def record_or_die(self: HttpJournal, step: StepRecord) -> Any:
    if step.status is StepStatus.SUCCEEDED and step.name.startswith(prefix) and not mark.exists():
        mark.write_text(step.name)
        os.kill(os.getpid(), signal.SIGKILL)
    return await record(self, step)


HttpJournal.record = record_or_die  # type: ignore[method-assign]
sys.argv = [module, *sys.argv[5:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
