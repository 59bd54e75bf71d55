"""The re-dated rewrite: every checkpoint deleted, a week-old rejection turned into an approval
(events and row), and every event re-dated into the last minute, so that it looks like fresh
activity that no checkpoint could have sealed yet.

Nothing inside the database tells that from a new gateway's first minute: every date is the
tamperer's to write. Without an anchor, verify says "not yet proven" (never "intact", and never
exit 0 with "proven"), as docs/audit.md says. What catches it is a checkpoint hash kept outside
the database: each checkpoint's log line prints it, in the `--anchor SEQ:HASH` form.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.audit.conftest import Raw
from tests.procs import run_cli
from tests.security.test_audit_present import WEEK, _age, _decided, _flip, _gateway

pytestmark = pytest.mark.subprocess  # a real gateway and the CLI
LOGGED = re.compile(r"audit checkpoint (\d+): .*hash ([0-9a-f]{64})")


async def _redate_recent(raw: Raw) -> None:
    """Every event dated one minute ago, each chain rehashed (no key needed)."""
    await raw.run("UPDATE events SET at = $1", time.time() - 60)
    for (approval_id,) in await raw.run("SELECT DISTINCT approval_id FROM events"):
        await raw.rechain(approval_id)


async def test_a_rewrite_redated_to_the_last_minute_is_caught_by_the_logged_anchor(tmp_path: Path) -> None:
    gw, raw = _gateway(tmp_path, every="1h")
    gw.start()
    rejected, _ = await _decided(gw)
    gw.kill9()  # nothing sealed yet (checkpoint_every 1h)
    await raw.drop_triggers()  # to simulate a week passing, not to tamper
    await _age(raw, WEEK)
    gw.start()  # seals at start
    assert gw.terminate() == 0  # and at stop
    code, out = await run_cli(gw.config, "audit", "verify")
    assert code == 0 and "audit trail intact" in out and "not sealed" not in out, out
    anchors = LOGGED.findall(gw.log.read_text())
    assert anchors, "each checkpoint logs its number and hash"
    seq, digest = anchors[-1]

    await _flip(raw, rejected)
    await _redate_recent(raw)
    code, out = await run_cli(gw.config, "audit", "verify")
    assert "not yet proven" in out and "proven" not in out.replace("not yet proven", ""), out
    code, out = await run_cli(gw.config, "audit", "verify", "--anchor", f"{seq}:{digest}")
    assert code == 1 and "no such checkpoint" in out, out
