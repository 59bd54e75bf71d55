"""The TypeScript SDK's idempotency keys are the Python SDK's, byte for byte: for each (run, step,
args), node derives the key, and Python derives it from the args as the TypeScript SDK sends them
(what the gateway holds). Cases written in JavaScript (sdk-ts/scripts/key-cases.mjs: floats, ints,
bigints, unicode keys, dropped undefined, toJSON) and in Python (below); and a real `serve`
derives the same key for a suspend that names none."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hitl_sdk.keys import args_hash, canonical_json, idempotency_key

from gateway.testing import TEST_API_KEY
from tests.typescript.node import build, node
from tests.typescript.stack import TsStack

pytestmark = pytest.mark.subprocess

PYTHON_CASES: list[tuple[str, str, Any]] = [
    ("inv-1", "pay_invoice:INV-1", {"invoice": "INV-1", "amount": 4200}),
    ("r", "s", {"z": 1, "a": {"y": [1, 2.5, "x"], "b": None}, "ß": "ss", "ǅ": 1, "𝒜": 2, "\ue000": 3}),
    ("r", "s", {"f": [0.1, 0.2, 0.30000000000000004, 1e-05, 2.5e-08, 1.25e22, -3.5]}),
    ("r", "s", {"big": 2**63, "neg": -(2**70)}),
    ("r", "s", {"s": "line\u2028sep \u00a0nbsp \x7f del \x00 nul"}),
    ("👩‍💻", "ステップ", {"κλειδί": ["τιμή", {"ä": {"b": {"c": {}}}}]}),
]


def test_the_keys_of_both_sdks_are_equal() -> None:
    build()
    out = node("scripts/print-keys.mjs", stdin=[list(c) for c in PYTHON_CASES])
    rows = [json.loads(line) for line in out.split("\n") if line]  # not splitlines: U+2028
    assert len(rows) >= 12 + len(PYTHON_CASES)
    for row in rows:
        args = json.loads(row["sent"])
        assert row["canonical"] == canonical_json(args), row
        assert row["key"] == idempotency_key(row["run"], row["step"], args), row
        assert row["hash"] == args_hash(args), row


def test_a_python_case_needs_nothing_from_the_transport() -> None:
    """The Python table's keys, from the Python values themselves (not what JSON made of them):
    a key computed on either side before sending matches."""
    build()
    out = node("scripts/print-keys.mjs", stdin=[list(c) for c in PYTHON_CASES])
    rows = [json.loads(line) for line in out.split("\n") if line]
    by_case = {(r["run"], r["step"], r["sent"]): r["key"] for r in rows}
    for run, step, args in PYTHON_CASES:
        if "big" in args:  # beyond 2**53: a JavaScript number cannot hold it (a bigint can)
            continue
        matches = [k for (r, s, sent), k in by_case.items() if r == run and s == step and json.loads(sent) == args]
        assert idempotency_key(run, step, args) in matches, (run, step, args)


SUSPEND_TWICE = """
import { GatewayClient, idempotencyKey } from "./dist/index.js";
const [url, apiKey] = process.argv.slice(1);
const client = new GatewayClient({ url, apiKey });
const args = { "😀": 1.5, b: [1e-7, 2 ** 53], a: { z: "ß", y: null } };
const call = { runId: "keys-1", step: "pay é", title: "t", args };
const first = await client.suspend(call);  // no key: the gateway derives its own
const second = await client.suspend({ ...call, idempotencyKey: idempotencyKey(call.runId, call.step, call.args) });
console.log(JSON.stringify({ first: first.id, second: second.id }));
"""


async def test_the_gateway_derives_the_same_key(ts: TsStack) -> None:
    """A suspend that names no key gets the gateway's key (Python's); the same suspend naming the
    TypeScript SDK's key is the same approval, not a second one."""
    ts.serve()
    assert ts.gw is not None
    out = node("--input-type=module", "-e", SUSPEND_TWICE, ts.gw.url, TEST_API_KEY)
    ids = json.loads(out)
    assert ids["first"] == ids["second"], ids
    assert len((await ts.call("GET", "/v1/approvals?run_id=keys-1"))["items"]) == 1
