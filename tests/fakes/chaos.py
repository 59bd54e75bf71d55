"""Run a Python program under chaos: `python chaos.py BUDGET_FILE MAX_DELAY -m module args...`.

While BUDGET_FILE holds a positive number, decrement it and SIGKILL this very process at a
uniformly random moment within MAX_DELAY seconds, whatever the program is doing."""

from __future__ import annotations

import os
import random
import runpy
import signal
import sys
import threading
from pathlib import Path

budget_file, max_delay, module = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[4]
budget = int(budget_file.read_text() or 0)
if budget > 0:
    budget_file.write_text(str(budget - 1))
    timer = threading.Timer(random.uniform(0, max_delay), os.kill, (os.getpid(), signal.SIGKILL))
    timer.daemon = True
    timer.start()
sys.argv = [module, *sys.argv[5:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
