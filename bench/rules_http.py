"""An allowed suspend over HTTP (not a test): how fast a real `serve` answers a suspend that a rule
allows at once, one client at a time (c=1), against the same suspend asked of a person.

    python -m bench.rules_http                     # 3 runs of 5 s each, c=1
    python -m bench.rules_http --before 100 --runs 5 --json

Per run, two fresh gateways on SQLite files: `allow`, whose rule `small-charges` allows bench a's
suspend body (a charge of 4200), after `--before` rules that do not match; and `ask`, with no
rules (bench a's suspend, carded to the web inbox). Prints p50/p99 per run, the load average, and
the medians. The load generator is bench.load's lean raw-socket client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from bench.load import run_load
from bench.rules_bench import toml
from bench.server import AUTH, Gateway

ALLOW = """
[[rule]]
name = "small-charges"
when = 'step == "charge" && args.amount < 5000'
then = "allow"
reason = "under 50"
"""


def one(extra: str, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hitl-rules-http-") as tmp:
        gw = Gateway(Path(tmp), Path(tmp) / "gateway.db", operator=False, extra_config=extra)
        gw.start()
        try:
            asyncio.run(run_load(gw.url, 1, 1.0, warmup=0.0))  # warm: imports, caches, the first file pages
            out: dict[str, Any] = asyncio.run(run_load(gw.url, 1, seconds, warmup=0.0)).summary()
            out["status"] = _last_status(gw.url)  # approved when a rule allowed it
        finally:
            gw.stop()
    return out


def _last_status(url: str) -> str:
    with urllib.request.urlopen(urllib.request.Request(f"{url}/v1/approvals?limit=1", headers=AUTH)) as r:
        return str(json.loads(r.read())["items"][0]["status"])


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.rules_http", description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--before", type=int, default=0, help="non-matching rules before the allowing one")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    arms = {"allow": toml(args.before) + ALLOW, "ask": ""}
    runs: dict[str, list[dict[str, Any]]] = {a: [] for a in arms}
    for i in range(args.runs):
        for arm in list(arms) if i % 2 == 0 else list(arms)[::-1]:
            result = one(arms[arm], args.seconds)
            if result["errors"]:
                raise RuntimeError(f"{arm}: {result['errors']} requests failed")
            expected = "approved" if arm == "allow" else "waiting_approval"
            if result["status"] != expected:
                raise RuntimeError(f"{arm}: the suspends ended {result['status']}, not {expected}")
            result["load"] = round(os.getloadavg()[0], 1)
            runs[arm].append(result)
            if not args.json:
                print(f"run {i + 1} {arm}: p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, load {result['load']}")
    medians = {
        arm: {k: statistics.median(r[k] for r in rs) for k in ("p50_ms", "p99_ms", "rate", "load")}
        for arm, rs in runs.items()
    }
    if args.json:
        print(json.dumps({"before": args.before, "runs": runs, "medians": medians}, indent=2))
    else:
        for arm, m in medians.items():
            print(f"median {arm}: p50 {m['p50_ms']} ms, p99 {m['p99_ms']} ms, {m['rate']:.0f}/s (load {m['load']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
