"""A gateway killed (-9) mid-job: a restarted `serve` takes the job over at once (the SQLite file's
serve lock proves the killed one gone); a runner that cannot prove it waits out the lease. Also
`hitl-gateway jobs list|retry` as a real process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.core.errors import StoreInUse
from gateway.core.models import JobStatus, Outcome
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.testing import TEST_API_KEY, TEST_SECRET, FakeClock

pytestmark = pytest.mark.subprocess  # every test here starts a process

FAKES = Path(__file__).parents[1] / "fakes"


def write_config(tmp_path: Path, command: list[str], lease: str = "60s") -> Path:
    cfg = tmp_path / "gw.toml"
    cfg.write_text(
        f"""
[store]
url = "sqlite:///{tmp_path / "gw.db"}"
lease = "{lease}"
[security]
secret_keys = ["{TEST_SECRET}"]
api_keys = ["{TEST_API_KEY}"]
[workers.agent]
command = {json.dumps(command)}
timeout = "20s"
"""
    )
    return cfg


async def decided(cfg: Path, clock: FakeClock | None = None) -> str:
    rt = Runtime(load_settings(cfg, env={}), clock=clock, owner="setup")
    await rt.start(background=False)
    try:
        approval, _ = await rt.service.suspend(SuspendRequest(run_id="r", step="s", title="t", worker="agent"))
        await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR)
        return approval.id
    finally:
        await rt.stop()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie waiting for init counts as ended


async def _gone(pid: int, within: float = 5.0) -> bool:
    """Whether process `pid` ends within `within` seconds."""
    for _ in range(int(within / 0.05)):
        if not _alive(pid):
            return True
        await asyncio.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # do not leave it behind
    return False


async def test_lease_expiry_after_kill(tmp_path: Path) -> None:
    """The job's lease is `store.lease` (10s here): held at +5s, taken over at +11s."""
    marker = tmp_path / "attempts"
    script = (
        "import os,sys,time; f=open(sys.argv[1],'a'); f.write(str(os.getpid())+'\\n'); f.close();"
        " time.sleep(0 if len(open(sys.argv[1]).read().split()) > 1 else 60)"
    )
    cfg = write_config(tmp_path, [sys.executable, "-c", script, str(marker)], lease="10s")
    approval_id = await decided(cfg)
    doomed = await asyncio.create_subprocess_exec(sys.executable, str(FAKES / "run_worker.py"), str(cfg))
    for _ in range(200):
        if marker.exists() and marker.read_text().strip():
            break
        await asyncio.sleep(0.05)
    doomed.send_signal(signal.SIGKILL)
    await doomed.wait()
    orphan = int(marker.read_text().split()[0])
    assert await _gone(orphan), "the worker outlived the gateway that launched it"  # PR_SET_PDEATHSIG

    now = datetime.now(UTC)
    rt = Runtime(load_settings(cfg, env={}), clock=FakeClock(now), owner="survivor")
    await rt.start(background=False)
    try:
        held = await rt.store.get_job(approval_id)
        assert held is not None and held.status is JobStatus.RUNNING and held.claimed_by == "doomed"
        assert await rt.worker.run_once() == 0  # the lease still holds
        rt.clock.set(now + timedelta(seconds=5))  # type: ignore[attr-defined]
        assert await rt.worker.run_once() == 0  # it was claimed less than 5s before `now`
        rt.clock.set(now + timedelta(seconds=11))  # type: ignore[attr-defined]
        assert await rt.worker.run_once() == 1
        done = await rt.store.get_job(approval_id)
        assert done is not None and done.status is JobStatus.SUCCEEDED and done.attempts == 2
        assert len(marker.read_text().split()) == 2
    finally:
        await rt.stop()


async def test_a_restarted_serve_takes_the_job_over_at_once(tmp_path: Path) -> None:
    """store.lease is 60 s; the restarted serve relaunches the killed one's job in well under 1 s,
    and while the killed one lived, a second serve on the file was refused."""
    marker = tmp_path / "attempts"
    script = (
        "import os,sys,time; f=open(sys.argv[1],'a'); f.write(str(os.getpid())+'\\n'); f.close();"
        " time.sleep(0 if len(open(sys.argv[1]).read().split()) > 1 else 60)"
    )
    cfg = write_config(tmp_path, [sys.executable, "-c", script, str(marker)])
    approval_id = await decided(cfg)
    doomed = await asyncio.create_subprocess_exec(sys.executable, str(FAKES / "run_worker.py"), str(cfg), "serve")
    for _ in range(200):
        if marker.exists() and marker.read_text().strip():
            break
        await asyncio.sleep(0.05)
    second = Runtime(load_settings(cfg, env={}), owner="second")
    with pytest.raises(StoreInUse, match=r"another hitl-gateway serve \(pid \d+\) is using"):
        await second.start(exclusive=True)
    doomed.send_signal(signal.SIGKILL)
    await doomed.wait()
    killed = asyncio.get_running_loop().time()

    rt = Runtime(load_settings(cfg, env={}), owner="restarted")
    await rt.start(exclusive=True)  # what `serve` does: the lock, then every claim in the file
    try:
        for _ in range(200):
            job = await rt.store.get_job(approval_id)
            if job is not None and job.status is JobStatus.SUCCEEDED:
                break
            await asyncio.sleep(0.02)
        took = asyncio.get_running_loop().time() - killed
        assert job is not None and job.status is JobStatus.SUCCEEDED and job.attempts == 2
        assert len(marker.read_text().split()) == 2
        assert took < 3.0, f"the job was taken over {took:.1f}s after the kill (the lease is 60s)"
        print(f"\nSQLite restart: the killed serve's job relaunched {took:.2f}s after the kill (restart included)")
    finally:
        await rt.stop()


async def cli(cfg: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "--config", str(cfg), *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def test_cli_jobs_list_and_retry(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, [sys.executable, "-c", "raise SystemExit(3)"])
    approval_id = await decided(cfg)
    rt = Runtime(load_settings(cfg, env={}), owner="w")
    await rt.start(background=False)
    await rt.worker.drain()
    await rt.stop()
    code, out = await cli(cfg, "jobs", "list", "--status", "failed")
    assert code == 0 and approval_id in out and "exit status 3" in out
    code, out = await cli(cfg, "jobs", "retry", approval_id)
    assert code == 0 and "queued" in out
    code, _ = await cli(cfg, "jobs", "retry", approval_id)
    assert code == 2  # not failed any more: a clear conflict, the user's to fix (exit 2)


async def test_lease_is_renewed_while_a_long_job_runs(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, [sys.executable, "-c", "import time; time.sleep(1.5)"])
    approval_id = await decided(cfg)
    rt = Runtime(load_settings(cfg, env={}), owner="holder")  # the real clock: leases really expire
    await rt.start(background=False)
    rt.worker.lease = timedelta(seconds=0.3)
    try:
        running = asyncio.create_task(rt.worker.run_once())
        stolen = 0
        while not running.done():
            await asyncio.sleep(0.1)
            stolen += len(await rt.store.claim_launches(datetime.now(UTC), "thief", timedelta(seconds=5), 10))
        assert await running == 1
        assert stolen == 0  # renewed every lease/3, so never expired while the worker ran
        job = await rt.store.get_job(approval_id)
        assert job is not None and job.status is JobStatus.SUCCEEDED and job.attempts == 1
    finally:
        await rt.stop()


async def test_an_entrypoint_pool_process_dies_with_its_gateway(tmp_path: Path) -> None:
    """A pool process in the middle of a long step: the gateway is SIGKILLed, the step must not
    go on running beside the retry that the expired lease will launch."""
    cfg = tmp_path / "gw.toml"
    cfg.write_text(
        f"""
[store]
url = "sqlite:///{tmp_path / "gw.db"}"
[security]
secret_keys = ["{TEST_SECRET}"]
api_keys = ["{TEST_API_KEY}"]
[workers.agent]
entrypoint = "tests.fakes.entry:handle"
pool_size = 1
timeout = "120s"
"""
    )
    rt = Runtime(load_settings(cfg, env={}), owner="setup")
    await rt.start(background=False)
    try:
        req = SuspendRequest(
            run_id="r", step="s", title="t", worker="agent", state={"out": str(tmp_path), "mode": "hang"}
        )
        approval, _ = await rt.service.suspend(req)
        await rt.service.decide(approval.id, Outcome.APPROVE, "web:bob", authority=Authority.OPERATOR)
    finally:
        await rt.stop()
    doomed = await asyncio.create_subprocess_exec(sys.executable, str(FAKES / "run_worker.py"), str(cfg))
    log = tmp_path / "entry.log"
    for _ in range(400):
        if log.exists() and log.read_text().strip():
            break
        await asyncio.sleep(0.05)
    child = json.loads(log.read_text().splitlines()[0])["pid"]
    assert _alive(child)  # hanging in the step
    doomed.send_signal(signal.SIGKILL)
    await doomed.wait()
    assert await _gone(child), "the pool process outlived the gateway that started it"
