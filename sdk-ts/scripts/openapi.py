"""Regenerate sdk-ts/openapi.json (the gateway's `/openapi.json`) and src/openapi.d.ts from it.

    PYTHONPATH=. python sdk-ts/scripts/openapi.py           # rewrite both
    PYTHONPATH=. python sdk-ts/scripts/openapi.py --check   # exit 1 when either is stale

tests/typescript/test_openapi_types.py runs the check.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from gateway.http.openapi import spec

SDK = Path(__file__).resolve().parents[1]


def generate() -> tuple[str, str]:
    """(openapi.json, openapi.d.ts) as they should be."""
    doc = json.dumps(spec(), indent=2, ensure_ascii=False) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "openapi.json", Path(tmp) / "openapi.d.ts"
        src.write_text(doc)
        cli = SDK / "node_modules" / "openapi-typescript" / "bin" / "cli.js"
        subprocess.run(["node", str(cli), str(src), "-o", str(out)], check=True, capture_output=True)
        return doc, out.read_text()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    doc, types = generate()
    targets = {SDK / "openapi.json": doc, SDK / "src" / "openapi.d.ts": types}
    if parser.parse_args().check:
        stale = [str(p) for p, text in targets.items() if not p.exists() or p.read_text() != text]
        if stale:
            print("stale (regenerate with sdk-ts/scripts/openapi.py):", *stale, file=sys.stderr)
        return 1 if stale else 0
    for path, text in targets.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
