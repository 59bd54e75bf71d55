"""Parse + validate one realistic suspend body: the contract's pydantic model (what the gateway
runs, `gateway.http.schemas.parse_suspend`) against the same model in msgspec (the other
candidate of issue 31), on the dict `decode_body` gives and on the raw bytes.

    python -m bench.contract_bench [--n 50000]

Prints microseconds per body (best of 5). The A/B on bench a (`python -m bench.ab`) is the
end-to-end measure; this one isolates the library's share of a suspend.
"""

from __future__ import annotations

import argparse
import json
import timeit
from collections.abc import Callable
from typing import Annotated, Any

from bench.load import suspend_body
from gateway import contract
from gateway.http.schemas import decode_body, parse_suspend

BODY = suspend_body(
    "bench-run-1",
    approvers=["web:alice"],
    policy="default",
    idempotency_key="bench-run-1:charge",
    code_version="v1.2.3",
    args_schema={"type": "object", "properties": {"amount": {"type": "integer"}}},
    editable=["amount"],
)
RAW = json.dumps(BODY).encode()


try:
    import msgspec
except ImportError:  # not a dependency of the gateway: the bench venv may lack it
    msgspec = None

if msgspec is not None:
    # The suspend body as a msgspec Struct with the same limits. Its errors (the first only, in
    # the body's key order, as a string) are why the gateway does not use it: see the README.
    _m = msgspec.Meta
    _Text = Annotated[str, _m(min_length=1, max_length=200, pattern=r"\S")]
    _Items = Annotated[list[Annotated[str, _m(min_length=1)]], _m(max_length=50)]
    _Channels = Annotated[list[Annotated[str, _m(min_length=1)]], _m(min_length=1, max_length=20)]

    class MsgspecSuspend(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        run_id: _Text
        step: _Text
        title: Annotated[str, _m(min_length=1, max_length=300, pattern=r"\S")]
        summary: Annotated[str, _m(max_length=4000)] | None = None
        args: dict[str, Any] | None = None
        state: Any = None
        channels: _Channels | None = None
        approvers: _Items | None = None
        policy: str | dict[str, Any] | None = None
        worker: str | None = None
        idempotency_key: Annotated[str, _m(max_length=200)] | None = None
        requested_by: Annotated[str, _m(max_length=200)] | None = None
        deadline: str | None = None
        args_schema: Any = None
        editable: Any = None
        code_version: Annotated[str, _m(max_length=100)] | None = None


def cases() -> dict[str, Callable[[], Any]]:
    found: dict[str, Callable[[], Any]] = {
        "pydantic validate(dict)": lambda: contract.validate(contract.SuspendBody, BODY),
        "gateway parse_suspend(dict)": lambda: parse_suspend(BODY),
        "gateway decode_body + parse_suspend": lambda: parse_suspend(decode_body(RAW)),
    }
    if msgspec is not None:
        decoder = msgspec.json.Decoder(MsgspecSuspend)
        found["msgspec convert(dict)"] = lambda: msgspec.convert(BODY, MsgspecSuspend)
        found["msgspec decode(bytes), no decode_body"] = lambda: decoder.decode(RAW)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=50_000)
    n = parser.parse_args().n
    for name, fn in cases().items():
        fn()
        best = min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6
        print(f"{name:40s} {best:6.2f} us")


if __name__ == "__main__":
    main()
