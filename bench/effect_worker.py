"""The two bare `command` workers of `make chaos` (standard library only: a launch costs a Python
start, nothing more). `python bench/effect_worker.py bare|keyed URL`.

On an approved decision each applies one effect: it POSTs the approval id to the soak's effects
API, then spends EFFECT_TAIL seconds on the rest of its step and exits 0. A gateway killed after
the POST and before it recorded `job_succeeded` launches the job again, and the effect is sent
again. `bare` ignores the gateway's key, as a worker written without it does; `keyed` sends
HITL_IDEMPOTENCY_KEY as the `Idempotency-Key` header, which the API de-duplicates on.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request

EFFECT_TAIL = 0.05  # seconds of work after the effect: the window a kill turns into a relaunch


def main() -> int:
    mode, url = sys.argv[1], sys.argv[2]
    doc = json.load(sys.stdin)
    if doc["status"] != "approved":
        return 0
    headers = {"Content-Type": "application/json"}
    if mode == "keyed":
        headers["Idempotency-Key"] = os.environ["HITL_IDEMPOTENCY_KEY"]
    body = json.dumps({"approval_id": os.environ["HITL_APPROVAL_ID"], "worker": mode}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=10) as resp:
        resp.read()
    time.sleep(EFFECT_TAIL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
