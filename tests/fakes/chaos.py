"""Run a module under chaos: `python chaos.py DIR KILLS MAX_DELAY -m module args...`.

For the first KILLS attempts of an approval's worker (counted with marker files in DIR), SIGKILL
this very process at a uniformly random moment within MAX_DELAY seconds, whatever it is doing."""

from __future__ import annotations

import os
import random
import runpy
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for `examples`
import examples.invoice_agent.agent  # noqa: F401 - import before arming: the kill lands in the run itself

marks, kills, max_delay, module = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[5]
approval = os.environ["HITL_APPROVAL_ID"]
done = len(list(marks.glob(f"{approval}.*")))
if done < kills:
    delay = random.uniform(0, max_delay)
    (marks / f"{approval}.{done}").write_text(f"{delay:.3f}")
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL))
    timer.daemon = True
    timer.start()
sys.argv = [module, *sys.argv[6:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
