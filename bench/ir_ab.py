"""Instructions per suspend over HTTP, tree against tree: an A/B that a loaded machine cannot blur.

    python -m bench.ir_ab /tmp/before /tmp/after            # 100 and 400 suspends per tree
    python -m bench.ir_ab . --rules none --rules /tmp/r100.toml   # the cost of a rule set

Each tree runs its own gateway app and an aiohttp client in one process under `valgrind
--tool=callgrind` (all threads), on a fresh SQLite file; per suspend = (Ir(large) - Ir(small)) /
(large - small), so that imports and start-up cancel out. The client's share is the same code in
both trees. Timings on a shared 2-core machine moved by 20% between runs; instruction counts
repeat within a fraction of a percent. Needs valgrind; a few minutes per tree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

_COLLECTED = re.compile(r"Collected : (\d+)")
_CHILD = """
import asyncio, sys, tempfile
from pathlib import Path
from aiohttp.test_utils import TestClient, TestServer
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import TEST_API_KEY, make_settings

async def main(count, rules):
    import tomllib
    sections = tomllib.loads(Path(rules).read_text()) if rules else {}
    settings = make_settings(f"sqlite:///{Path(tempfile.mkdtemp()) / 'ir.db'}", sections)
    rt = Runtime(settings, owner="ir")
    async with TestClient(TestServer(create_app(settings, runtime=rt, background=False))) as client:
        auth = {"Authorization": f"Bearer {TEST_API_KEY}"}
        for i in range(count):
            body = {"run_id": f"r{i}", "step": "charge", "title": "Charge ACME 42.00 EUR",
                    "summary": "Monthly invoice", "args": {"amount": 4200, "currency": "EUR"},
                    "state": {"cursor": 3}, "channels": ["web"]}
            resp = await client.post("/v1/suspend", json=body, headers=auth)
            assert resp.status == 201, await resp.text()
            await resp.read()
    print(count)

asyncio.run(main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else ""))
"""


def measure(tree: Path, count: int, rules: str = "") -> int:
    out = Path(tempfile.mkdtemp()) / "cg.out"
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": f"{tree}:{tree / 'sdk'}"}
    child = [sys.executable, "-c", _CHILD, str(count), rules]
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *child]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    found = _COLLECTED.findall(proc.stderr)
    if proc.returncode != 0 or not found:
        raise SystemExit(f"{tree}: {count} suspends failed\n{proc.stderr[-2000:]}")
    return int(found[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=400)
    parser.add_argument("--rules", action="append", default=None, help="a TOML of [rules]/[[rule]] (repeat; none)")
    args = parser.parse_args()
    for tree in args.trees:
        for rules in args.rules or ["none"]:
            path = "" if rules == "none" else str(Path(rules).resolve())
            small, large = measure(tree, args.small, path), measure(tree, args.large, path)
            per = (large - small) / (args.large - args.small)
            out = {"tree": str(tree), "rules": rules, "instructions_per_suspend": round(per)}
            print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
