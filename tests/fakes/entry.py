"""Entrypoint worker functions for tests (imported once per pool process)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

IMPORTED_AT = time.time()


class Busy(Exception):
    transient = True


def _log(doc: dict[str, Any]) -> None:
    out = Path(doc["state"]["out"])
    line = {
        "pid": os.getpid(),
        "imported_at": IMPORTED_AT,
        "approval": os.environ["HITL_APPROVAL_ID"],
        "key": os.environ.get("HITL_IDEMPOTENCY_KEY"),
        "doc_key": doc.get("idempotency_key"),
    }
    with (out / "entry.log").open("a") as fh:
        fh.write(json.dumps(line) + "\n")


def handle(doc: dict[str, Any]) -> None:
    _log(doc)
    print("handled", doc["status"])
    mode = doc["state"].get("mode", "ok")
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "boom":
        raise ValueError("bad input from bob@example.com")
    if mode == "busy":
        raise Busy("try later")
    if mode == "hang":
        time.sleep(60)


async def handle_async(doc: dict[str, Any]) -> None:
    _log(doc)
