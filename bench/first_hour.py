"""The first minutes of a newcomer: `make run` from nothing, measured.

    python -m bench.first_hour                 # the tree as it is in this checkout (committed or not)
    python -m bench.first_hour --ref main      # the tree of a commit (git archive), e.g. before a change
    python -m bench.first_hour --target test   # what `make test`'s install adds on top (no tests run)

Copies the tree into a temporary directory (no .venv, no var/), runs `make run` there on a free
port (HITL_SERVER_PORT) with a fresh venv, and prints the time until `GET /healthz` answers 200
and the venv's size on disk (`du -s` of .venv, in MB of 10^6 bytes, as `du -sh --si` shows it).
pip uses the machine's configuration as it is (indexes, find-links, its cache): say which when
you quote a number. `--target test` builds `make run`'s venv first, untimed, then times the
install `make test` adds to it (the stamp, not the suite).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def copy_tree(dest: Path, ref: str | None) -> None:
    """The files of `ref` (git archive), or of this checkout as it is: tracked and untracked, not ignored."""
    if ref is not None:
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
        tar = dest.with_suffix(".tar")
        tar.write_bytes(archive)
        with tarfile.open(tar) as tf:
            tf.extractall(dest, filter="data")
        tar.unlink()
        return
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return int(resp.status) == 200
    except OSError:
        return False


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1e6


def packages(venv: Path) -> int:
    out = subprocess.run([str(venv / "bin" / "pip"), "list", "--format=freeze"], capture_output=True, text=True)
    return len(out.stdout.splitlines())


def measure_run(tree: Path, timeout: float) -> tuple[float, float]:
    """`make run` in `tree`: (seconds until /healthz answers, MB of .venv)."""
    port = free_port()
    env = {**os.environ, "HITL_SERVER_PORT": str(port), "PYTHONPATH": ""}
    env.pop("VIRTUAL_ENV", None)
    log = (tree / "make-run.log").open("w")
    start = time.monotonic()
    cmd = ["make", "run"]
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while not healthy(port):
            if proc.poll() is not None:
                raise SystemExit(f"make run exited {proc.returncode}:\n{(tree / 'make-run.log').read_text()[-3000:]}")
            if time.monotonic() - start > timeout:
                raise SystemExit(f"no /healthz within {timeout:.0f} s")
            time.sleep(0.2)
        elapsed = time.monotonic() - start
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    return elapsed, du_mb(tree / ".venv")


def measure_make(tree: Path, target: str) -> float:
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": ""}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(["make", target], cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"make {target} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.first_hour", description=__doc__.splitlines()[0])
    p.add_argument("--ref", help="measure the tree of this git ref (default: this checkout as it is)")
    p.add_argument("--target", choices=["run", "test"], default="run")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (its path is printed)")
    args = p.parse_args(argv)
    what = args.ref or "this checkout"
    tmp = Path(tempfile.mkdtemp(prefix="first-hour-"))
    tree = tmp / "hitl-gateway"
    tree.mkdir()
    try:
        copy_tree(tree, args.ref)
        seconds, mb = measure_run(tree, args.timeout)
        n = packages(tree / ".venv")
        print(f"{what}: make run: /healthz answered after {seconds:.1f} s; .venv {mb:.0f} MB, {n} packages")
        if args.target == "test":
            stamp_time = measure_make(tree, ".venv/.installed-stamp")
            n = packages(tree / ".venv")
            mb = du_mb(tree / ".venv")
            print(f"{what}: then make test's install: {stamp_time:.1f} s; .venv {mb:.0f} MB, {n} packages")
        sys.stdout.flush()
    finally:
        if args.keep:
            print(f"kept {tree}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
