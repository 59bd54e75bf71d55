"""The audit chain's cost on bench d, in instructions: the tree against variants of itself.

    python -m bench.chain_cost                      # every variant, 1,000 and 6,000 due
    python -m bench.chain_cost --variants nochain,tree --small 1000 --large 6000

Timings of a storm moved by more than the 5% goal between runs on the shared machine this was
built on; instruction counts (`valgrind --tool=callgrind`, all threads) repeat exactly. Each
variant is this checkout's HEAD (`git archive`) with a patch of bench/chain_cost/ applied
(`tree`: none). Per variant and size, the bench's bulk load fills a storm file outside valgrind,
then the bench d storm (`bench.inproc._storm`) runs under it; per approval = (Ir(large) -
Ir(small)) / (large - small), so that start-up and loading cancel out. The variants, and what
each one takes out, are described at the top of their patch. A patch that no longer applies
means the store's write path moved: re-make it against the new tree (docs/performance.md, "The
audit chain on the timeout storm", has the numbers these printed).

Needs valgrind (Debian: `apt-get install valgrind`); several minutes per variant.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PATCHES = HERE / "chain_cost"
VARIANTS = ("nochain", "floor", "floor_head", "floor_claim", "tree")
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")

_PREP = """
import pathlib, sys
from datetime import UTC, datetime
from bench.bulk import due_template, insert_pending, migrate
db, count = pathlib.Path(sys.argv[1]), int(sys.argv[2])
migrate(db)
insert_pending(db, count, due_template("agent", datetime(2026, 12, 1, tzinfo=UTC)), prefix="due")
"""
_STORM = """
import asyncio, json, pathlib, sys
from bench import inproc
print(json.dumps(asyncio.run(inproc._storm(pathlib.Path(sys.argv[1]), int(sys.argv[2])))))
"""


def make_tree(variant: str, into: Path) -> Path:
    """HEAD of this checkout under `into`, with the variant's patch applied."""
    tree = into / variant
    tree.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=HERE.parent, check=True, capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(tree, filter="data")
    if variant != "tree":
        done = subprocess.run(["git", "apply", str(PATCHES / f"{variant}.patch")], cwd=tree, capture_output=True)
        if done.returncode:
            raise SystemExit(f"{variant}.patch no longer applies to HEAD: {done.stderr.decode().strip()}")
    return tree


def instructions(tree: Path, counts: tuple[int, ...], work: Path) -> dict[int, int]:
    """Ir of the storm over a fresh file of `count` due approvals, for each count (concurrently)."""
    runs = {}
    for count in counts:
        db = work / f"{tree.name}-{count}.db"
        subprocess.run([sys.executable, "-c", _PREP, str(db), str(count)], cwd=tree, check=True)
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work / f'{tree.name}-{count}.cg'}"]
        runs[count] = subprocess.Popen(
            [*cmd, sys.executable, "-c", _STORM, str(db), str(count)],
            cwd=tree,
            env={**os.environ, "PYTHONHASHSEED": "0"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    out = {}
    for count, proc in runs.items():
        stdout, stderr = proc.communicate()
        decided = json.loads(stdout.strip().splitlines()[-1])["decided"] if proc.returncode == 0 else None
        found = _COLLECTED.findall(stderr)
        if decided != count or not found:
            raise SystemExit(f"{tree.name}, {count} due: the storm failed (decided {decided})\n{stderr[-2000:]}")
        out[count] = int(found[-1])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=6000)
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    if args.large <= args.small:
        parser.error("--large must be larger than --small")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    per: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="hitl-chain-cost-") as tmp:
        for variant in variants:
            ir = instructions(make_tree(variant, Path(tmp)), (args.small, args.large), Path(tmp))
            per[variant] = (ir[args.large] - ir[args.small]) / (args.large - args.small)
            line = f"{variant:12} Ir {ir[args.small]:,} / {ir[args.large]:,}: {per[variant]:,.0f} per approval"
            print(line, flush=True)
    base = per.get("nochain")
    print("\n| variant | instructions per storm approval | over NOCHAIN |\n|---|---|---|")
    for variant, value in per.items():
        over = "" if base is None or variant == "nochain" else f"+{value - base:,.0f} ({(value - base) / base:+.1%})"
        print(f"| {variant} | {value:,.0f} | {over} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
