"""The journal calls of an `entrypoint` pool process, answered over its socket instead of HTTP.

A pool process runs one launch at a time. Its SDK (`hitl_sdk.journal.PipeJournal`) sends one JSON
line per call: `{"op": "record", "run_id", "name", "body"}` (the body of `PUT
/v1/runs/{run_id}/steps/{name}`) or `{"op": "steps", "run_id"}`; the answer is one line,
`{"ok": ...}` as the HTTP answer's body, or `{"error": {"status", "code", "message"}}` as its
error. Each call goes through the same use case as the HTTP route (`RunJournal`), as the caller
holding the launch's own resume token: the process reaches the run it was launched for, in its
namespace, and nothing else, exactly as its `HITL_RESUME_TOKEN` would over HTTP. A call while
the process runs no launch is refused.

What it saves is the HTTP request per step: its connection, parsing, middleware and the key
check (`python -m bench.cycle`, docs/performance.md).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from gateway.core.errors import BadRequest, Conflict, GatewayError, PayloadTooLarge
from gateway.service.journal import RecordStep, RunCaller, RunJournal, step_from_body

log = logging.getLogger("gateway.worker")

__all__ = ["answer"]


async def answer(journal: RunJournal, max_bytes: int, token: str | None, line: bytes) -> bytes:
    """The answer line to one request `line` of a pool process whose launch holds `token` (None:
    it runs no launch now). A line longer than `max_bytes` (the HTTP body limit, `[server]
    max_body_bytes`) is refused as the route refuses that body: 413."""
    try:
        if len(line) > max_bytes:
            raise PayloadTooLarge(f"the journal call is larger than the {max_bytes}-byte limit")
        return _line({"ok": await _call(journal, token, line)})
    except GatewayError as exc:
        return _line({"error": {"status": exc.status, "code": exc.code, "message": exc.message}})
    except Exception:  # the use case failed (the store): the SDK retries a 5xx as transient
        log.exception("a pool process's journal call failed")
        return _line({"error": {"status": 500, "code": "internal_error", "message": "the journal call failed"}})


async def _call(journal: RunJournal, token: str | None, line: bytes) -> Any:
    try:
        message = json.loads(line)
    except ValueError:
        raise BadRequest("a journal call is one JSON object per line") from None
    if not isinstance(message, dict) or not isinstance(message.get("run_id"), str):
        raise BadRequest("a journal call names its run: 'run_id'")
    if token is None:
        raise Conflict("this pool process runs no launch now: no journal to reach")
    caller = RunCaller(None, token)
    run_id, op = message["run_id"], message.get("op")
    if op == "steps":
        return await journal.steps(run_id, caller)
    if op == "record" and isinstance(message.get("name"), str) and isinstance(message.get("body"), dict):
        step = step_from_body(message["body"], run_id, message["name"])
        return (await journal.record(RecordStep(step, caller))).to_api()
    raise BadRequest("a journal call is 'steps' (run_id) or 'record' (run_id, name, body)")


def _line(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, separators=(",", ":")).encode() + b"\n"
