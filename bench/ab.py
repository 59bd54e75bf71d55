"""A/B of benches a, d and g: alternate gateway trees on the same machine, medians side by side.

    python -m bench.ab --tree /path/to/before --tree . [--only a,d,g] [--runs 3]
    python -m bench.ab --tree . --rules none --rules bench/rules100.toml --only a   # a with and without rules

Each tree is a checkout whose `gateway` package is measured (`git worktree add` or `git archive`
of the commit to compare). Per run, per bench, the trees take turns:
- a: suspend over HTTP: a fresh `hitl-gateway serve` of that tree on SQLite, 1 s at c=1 to warm
  it, then `--seconds` at `--concurrency` (the load generator and this harness are this tree's;
  `--client raw|aiohttp`, repeat to compare generators);
- d: timeout storm, `--storm` approvals due at once (10^5), the tree's own `bench.inproc.storm`
  in a fresh interpreter on that tree;
- g: SDK journal replay, the tree's own `bench.inproc.journal`, likewise.
For d and g, `cpu_s` is the CPU time of that interpreter, all threads, the loading of its rows
included (the same code in both trees): less sensitive to the neighbours than the wall clock;
d's `storm_cpu_s` is the storm's alone (a tree whose bench has no such field shows a dash).
`--rules FILE` (repeat; `none`: no rules) adds that TOML (`[rules]`, `[[rule]]`) to a's config:
each tree is then measured with each file, as columns of their own (`python -m bench.rules_bench
--toml 100` writes 100 rules that the bench's suspend body runs through without a match).
The trees run under this interpreter (a tree that needs other packages: install them in this
venv, e.g. aiosqlite for a tree from before issue 15). Prints every run with the load average,
then the medians in one column per tree. On a shared machine compare the columns of one
invocation, not numbers taken at different times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.load import run_load
from bench.server import Gateway

FIELDS = {
    "a": ("rate", "p50_ms", "p99_ms", "server_cpu_us", "client_cpu_us"),
    "d": ("seconds", "storm_cpu_s", "cpu_s"),
    "g": ("replay_steps_per_s", "record_steps_per_s", "cpu_s"),
}
_INPROC = """
import json, pathlib, sys, time
import gateway
from bench import inproc
work, letter, count = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
cpu = time.process_time()
out = inproc.storm(work, count) if letter == "d" else inproc.journal(work)
out["cpu_s"] = round(time.process_time() - cpu, 2)
out["gateway"] = gateway.__file__
print(json.dumps(out))
"""


def bench_a(tree: Path, client: str, concurrency: int, seconds: float, extra: str = "") -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hitl-ab-") as tmp:
        # suspends only; `extra`: more config (the --rules file)
        gw = Gateway(Path(tmp), Path(tmp) / "gateway.db", root=tree, operator=False, extra_config=extra)
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


def bench_inproc(tree: Path, letter: str, storm: int) -> dict[str, Any]:
    """d or g of `tree`, in a fresh interpreter whose `gateway` and `bench` are that tree's."""
    with tempfile.TemporaryDirectory(prefix="hitl-ab-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
        env["PYTHONPATH"] = str(tree)
        done = subprocess.run(
            [sys.executable, "-c", _INPROC, tmp, letter, str(storm)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"bench {letter} of {tree} failed:\n{done.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not str(out["gateway"]).startswith(str(tree)):  # an installed copy would measure the wrong tree
        raise RuntimeError(f"bench {letter} of {tree} imported {out['gateway']}")
    return out


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ab")
    p.add_argument("--tree", action="append", type=Path, required=True, help="a checkout to measure (repeat)")
    p.add_argument("--only", default="a,d,g", help="comma-separated benches among a, d, g")
    p.add_argument("--client", action="append", choices=("raw", "aiohttp"), help="a's load generator (repeat)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0, help="a: seconds of load per run")
    p.add_argument("--concurrency", type=int, default=64, help="a: concurrent clients")
    p.add_argument("--storm", type=int, default=100_000, help="d: approvals due at once")
    p.add_argument("--rules", action="append", help="a: a TOML of [rules]/[[rule]] added to the config (repeat; none)")
    args = p.parse_args()
    rules = {name: "" if name == "none" else Path(name).read_text() for name in args.rules or ["none"]}
    # The columns: each tree, with each rules file when more than one is given.
    trees = [t.resolve() for t in args.tree]
    arms = [(t, r) for t in trees for r in rules]
    columns = {(t, r): (f"{t} {r}" if len(rules) > 1 else str(t)) for t, r in arms}
    cases = []  # (bench label, letter, run one)
    for letter in args.only.split(","):
        if letter == "a":
            for client in args.client or ["raw"]:
                cases.append(
                    (
                        f"a {client}",
                        "a",
                        lambda arm, c=client: bench_a(arm[0], c, args.concurrency, args.seconds, rules[arm[1]]),
                    )
                )
        elif letter in ("d", "g"):
            cases.append((letter, letter, lambda arm, x=letter: bench_inproc(arm[0], x, args.storm)))
        else:
            p.error(f"unknown bench {letter!r} (a, d or g)")
    runs: dict[tuple[str, Any], list[dict[str, Any]]] = {(label, a): [] for label, _, _ in cases for a in arms}
    for i in range(args.runs):
        for label, _, run in cases:
            for arm in arms if i % 2 == 0 else arms[::-1]:  # alternate who goes first
                result = run(arm)
                runs[(label, arm)].append(result)
                shown = {k: v for k, v in result.items() if k != "gateway"}
                load = os.getloadavg()[0]
                print(f"run {i + 1} {label} {columns[arm]}: {json.dumps(shown)} load {load:.1f}", flush=True)
    print(f"\nmedian of {args.runs} alternating runs (a at c={args.concurrency}, d with {args.storm:,} due):")
    width = max(len(c) for c in columns.values())
    print(f"{'bench':<28}" + "".join(f"{columns[a]:>{width + 2}}" for a in arms))
    for label, letter, _ in cases:
        for field in FIELDS[letter]:
            cells = [[r[field] for r in runs[(label, a)] if field in r] for a in arms]
            shown = [f"{statistics.median(c):,.1f}" if c else "-" for c in cells]
            print(f"{label + ' ' + field:<28}" + "".join(f"{c:>{width + 2}}" for c in shown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
