"""A/B of bench a: alternate gateway trees (and load generators) on the same machine, medians.

    python -m bench.ab --tree /path/to/before --tree . [--client raw --client aiohttp] [--runs 3]

Each tree is a checkout whose `gateway` package is served (`git worktree add` or `git archive`
of the commit to compare); the load generator and this harness come from this tree. Per run and
per (tree, client), alternating: a fresh gateway on SQLite, 1 s of c=1 to warm it, then
`--seconds` at `--concurrency`. Prints every run and the medians of rate, p50, p99, server CPU
per suspend (user + system, all threads) and the generator's CPU per request. On a shared
machine compare the columns of one invocation, not numbers taken at different times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.load import run_load
from bench.server import Gateway

FIELDS = ("rate", "p50_ms", "p99_ms", "server_cpu_us", "client_cpu_us")


def once(tree: Path, client: str, concurrency: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hitl-ab-") as tmp:
        gw = Gateway(Path(tmp), Path(tmp) / "gateway.db", root=tree, operator=False)  # suspends only
        gw.start()
        try:
            asyncio.run(run_load(gw.url, 1, 1.0, warmup=0.0, client=client))
            cpu0 = gw.cpu_seconds()
            out: dict[str, Any] = asyncio.run(
                run_load(gw.url, concurrency, seconds, warmup=0.0, client=client)
            ).summary()
            out["server_cpu_us"] = round((gw.cpu_seconds() - cpu0) / max(1, out["requests"]) * 1e6, 1)
        finally:
            gw.stop()
    return out


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ab")
    p.add_argument("--tree", action="append", type=Path, required=True, help="a checkout to serve (repeat)")
    p.add_argument("--client", action="append", choices=("raw", "aiohttp"), help="load generator (repeat)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, default=64)
    args = p.parse_args()
    combos = [(tree.resolve(), client) for tree in args.tree for client in args.client or ["raw"]]
    runs: dict[str, list[dict[str, Any]]] = {f"{t} {c}": [] for t, c in combos}
    for i in range(args.runs):
        for tree, client in combos:
            result = once(tree, client, args.concurrency, args.seconds)
            runs[f"{tree} {client}"].append(result)
            print(f"run {i + 1} {tree} {client}: {json.dumps(result)} load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nmedian of {args.runs} alternating runs, c={args.concurrency}:")
    for name, results in runs.items():
        print(name, json.dumps({f: statistics.median(r[f] for r in results) for f in FIELDS}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
