"""Profile the serving process under suspend load with py-spy; print the hottest frames.

    python -m bench.profile [--concurrency 64] [--seconds 8] [--log-level WARNING]

Writes the collapsed stacks (flamegraph input) next to the results as bench/profile-<c>.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.load import run_load
from bench.server import Gateway


def summarize(collapsed: Path, top: int = 30) -> str:
    self_time: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().split("\n"):  # not splitlines: frames may hold U+2028 and the like
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = stack.split(";")
        total += n
        self_time[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    out = [f"{total} samples", "", "self %  frame"]
    out += [f"{100 * n / total:5.1f}  {f}" for f, n in self_time.most_common(top)]
    out += ["", "incl % frame"]
    out += [f"{100 * n / total:5.1f}  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--gil", action="store_true", help="only samples holding the GIL (Python CPU)")
    args = p.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy is not installed: pip install -e '.[bench]'")
        return 2
    out = Path(__file__).with_name(f"profile-{args.concurrency}.txt")
    with tempfile.TemporaryDirectory(prefix="hitl-profile-") as tmp:
        gw = Gateway(Path(tmp), Path(tmp) / "gateway.db", log_level=args.log_level)
        gw.start()
        assert gw.proc is not None
        try:
            cmd = [spy, "record", "--pid", str(gw.proc.pid), "--format", "raw", "--output", str(out)]
            cmd += ["--duration", str(int(args.seconds)), "--rate", "250", "--threads", "--nonblocking"]
            cmd += ["--gil"] if args.gil else []
            rec = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            result = asyncio.run(run_load(gw.url, args.concurrency, args.seconds, warmup=0.2))
            rec.wait(timeout=60)
        finally:
            gw.stop()
    print(result.summary())
    print(summarize(out, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
