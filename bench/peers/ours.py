"""Our cycle for the peers' table: `bench.cycle.run` on SQLite, or on a fresh PostgreSQL database.

python -m bench.peers.ours [--pg] [--seconds 10] [--concurrency 64]   # prints one JSON line
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench import cycle


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peers.ours")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--pg", action="store_true", help="on a fresh PostgreSQL database (bench/pg.py)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="peers-ours-") as tmp:
        if args.pg:
            from bench import pg

            with pg.database("hitl_peers_ours") as url:
                result = cycle.run(Path(tmp), seconds=args.seconds, concurrency=args.concurrency, store_url=url)
        else:
            result = cycle.run(Path(tmp), seconds=args.seconds, concurrency=args.concurrency)
            result.pop("postgres_cpu_us", None)  # no PostgreSQL in this run: what it counted was another's
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
