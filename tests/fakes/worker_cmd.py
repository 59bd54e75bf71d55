"""A command worker for tests: `python worker_cmd.py MODE OUT_DIR`.

Records its stdin document and HITL_* environment in OUT_DIR/<approval>.<n>.json, prints a
line with PII and its token, then behaves as MODE says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

mode, out = sys.argv[1], Path(sys.argv[2])
doc = json.load(sys.stdin)
env = {k: v for k, v in os.environ.items() if k.startswith("HITL_")}
n = len(list(out.glob(f"{env['HITL_APPROVAL_ID']}.*.json")))
(out / f"{env['HITL_APPROVAL_ID']}.{n}.json").write_text(json.dumps({"doc": doc, "env": env, "pid": os.getpid()}))
print(f"resuming for alice@example.com with {env['HITL_RESUME_TOKEN']}", flush=True)
print("warning on stderr", file=sys.stderr, flush=True)
if mode == "ok":
    sys.exit(0)
if mode == "tempfail":
    sys.exit(75)
if mode == "fail":
    sys.exit(3)
if mode == "signal":
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "hang":  # a grandchild in the same process group, then hang
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (out / "grandchild.pid").write_text(str(child.pid))
    time.sleep(60)
if mode == "flaky":  # transient on the first attempt, then fine
    sys.exit(75 if n == 0 else 0)
sys.exit(0)
