"""One long-lived process of an `entrypoint` worker pool (run as `python -m gateway.jobs.pool_child
pkg.mod:func PARENT_PID [JOURNAL_FD]`). It imports the function once, then serves requests, one
JSON line each, on stdin; it answers one JSON line each on the original stdout (the function's own
prints are captured and returned as the job's output tail).

The function gets the rehydration document; `HITL_*` variables are set while it runs, so
`DurableRun.from_env(document=...)` works; with JOURNAL_FD (the gateway's socket for this
process's journal calls, gateway.jobs.journal_pipe) also HITL_JOURNAL_FD, and its journal needs
no HTTP. Returning means success. `SystemExit(75)` or an
exception whose class has `transient = True` (e.g. `gateway.sdk.TransientError`) is transient;
any other exception or exit code is terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import io
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from gateway.jobs.launch import TAIL_BYTES, AttemptOutcome, classify_exit, exit_error
from gateway.jobs.orphans import die_with_parent


def load(spec: str) -> Callable[..., Any]:
    module, _, name = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{spec} is not callable")
    return obj  # type: ignore[no-any-return]


def _call(fn: Callable[..., Any], document: Any, loop: asyncio.AbstractEventLoop) -> tuple[AttemptOutcome, str | None]:
    try:
        result = fn(document)
        if inspect.isawaitable(result):
            loop.run_until_complete(result)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        verdict = classify_exit(code)
        return verdict, None if verdict is AttemptOutcome.SUCCEEDED else exit_error(code)
    except Exception as exc:
        verdict = AttemptOutcome.TRANSIENT if getattr(type(exc), "transient", False) else AttemptOutcome.TERMINAL
        return verdict, f"{type(exc).__name__}: {exc}"[:500]
    return AttemptOutcome.SUCCEEDED, None


def serve(fn: Callable[..., Any], requests: TextIO, replies: TextIO, journal_fd: int | None = None) -> None:
    loop = asyncio.new_event_loop()
    # The journal socket is this process's only: a program the step starts inherits neither the
    # socket (not inheritable) nor its use (the variable names this pid; its SDK goes over HTTP).
    journal = {} if journal_fd is None else {"HITL_JOURNAL_FD": f"{journal_fd}:{os.getpid()}"}
    for line in requests:
        req = json.loads(line)
        captured = io.StringIO()
        os.environ.update(req["env"] | journal)
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            verdict, error = _call(fn, req["document"], loop)
        for name in req["env"] | journal:
            os.environ.pop(name, None)
        reply = {"verdict": verdict.value, "error": error, "output": captured.getvalue()[-TAIL_BYTES:] or None}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    loop.close()


def main() -> None:
    if len(sys.argv) > 2 and not die_with_parent(int(sys.argv[2])):  # a long step must not outlive the gateway
        sys.exit(75)
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything the code prints outside a request goes to stderr, not the protocol
    sys.stdout = sys.stderr
    journal_fd = int(sys.argv[3]) if len(sys.argv) > 3 else None  # the gateway's journal socket
    if journal_fd is not None:
        os.set_inheritable(journal_fd, False)
    fn = load(sys.argv[1])
    serve(fn, sys.stdin, replies, journal_fd)


if __name__ == "__main__":
    main()
