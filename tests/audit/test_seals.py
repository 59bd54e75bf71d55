"""What a checkpoint's time proves (both backends): a tamperer who deletes the checkpoints, or
appends a backdated event, or slips an unchained one in front of a chain, is caught, while
events newer than the newest checkpoint are reported as not proven yet."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from gateway.core.audit import event_hash, load_public_key
from gateway.core.errors import CheckpointsDeleted
from gateway.runtime import Runtime
from gateway.service.audit import verify_lines
from gateway.testing import FakeClock
from tests.audit.conftest import Raw, decided
from tests.audit.offline import run_script, write

pytestmark = pytest.mark.subprocess  # every test here starts a process

HOUR = 3600.0  # long after the gateway's minute timer would have sealed what it wrote


async def test_deleted_checkpoints_do_not_hide_a_rewrite(
    runtime: Runtime, clock: FakeClock, trail: list[str], raw: Raw
) -> None:
    """The review's attack: rewrite an actor, recompute the chain, delete every checkpoint."""
    victim = trail[1]
    await raw.run("UPDATE events SET actor = 'operator:mallory' WHERE approval_id = $1 AND kind = 'approved'", victim)
    await raw.rechain(victim)
    await raw.run("DELETE FROM audit_leaves")
    await raw.run("DELETE FROM audit_checkpoints")
    clock.advance(HOUR)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.approval_id in trail and problem.found.startswith("not sealed")
    assert "and no checkpoint since: checkpoints deleted" in problem.found  # the signed trail's rule, first


async def test_deleted_newest_checkpoint_does_not_hide_a_rewrite(
    runtime: Runtime, clock: FakeClock, trail: list[str], raw: Raw
) -> None:
    later = await decided(runtime, 1, clock, run="later")
    await runtime.audit.seal()  # checkpoint 2 seals `later`
    await raw.run("UPDATE events SET actor = 'operator:mallory' WHERE approval_id = $1 AND kind = 'approved'", *later)
    await raw.rechain(later[0])
    await raw.run("DELETE FROM audit_leaves WHERE checkpoint = 2")
    await raw.run("DELETE FROM audit_checkpoints WHERE seq = 2")
    clock.advance(HOUR)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (later[0], 1)
    assert problem.found.startswith("not sealed") and "checkpoints deleted" in problem.found


async def _append(raw: Raw, approval_id: str, kind: str, actor: str, at: float) -> int:
    """A correctly chained event, appended at the end of the approval's chain."""
    seq, prev = (await raw.run("SELECT seq, hash FROM events WHERE approval_id = $1 ORDER BY id DESC", approval_id))[0]
    digest = event_hash(prev, seq + 1, approval_id, kind, actor, at, None, "{}")
    await raw.run(
        "INSERT INTO events (approval_id, kind, at, actor, channel, data, seq, hash)"
        " VALUES ($1, $2, $3, $4, NULL, '{}', $5, $6)",
        approval_id,
        kind,
        at,
        actor,
        seq + 1,
        digest,
    )
    if not raw.sqlite:
        await raw.run("UPDATE audit_heads SET seq = $1, hash = $2 WHERE approval_id = $3", seq + 1, digest, approval_id)
    return int(seq) + 1


async def test_backdated_append_is_caught_until_the_gateway_seals_it(
    runtime: Runtime, clock: FakeClock, trail: list[str], raw: Raw
) -> None:
    """INSERT needs no trigger dropped: a comment dated just after the suspend, appended a day
    later to a decided, sealed approval. Until a checkpoint seals it, it is an event older than
    the newest checkpoint that no checkpoint seals; once sealed, it is what docs/audit.md calls
    the limit: a writer of the database can add events, as any writer can."""
    victim = trail[0]
    suspended_at = (await raw.run("SELECT at FROM events WHERE approval_id = $1 AND seq = 1", victim))[0][0]
    clock.advance(24 * HOUR)
    await runtime.audit.seal()  # the minute timer went on: checkpoint 2, a day after the events
    seq = await _append(raw, victim, "comment_added", "operator:mallory", suspended_at + 0.5)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, seq)
    assert problem.found.startswith("not sealed")
    await runtime.audit.seal()
    assert (await runtime.audit.verify()).ok


async def test_the_gateway_does_not_seal_over_deleted_checkpoints(
    runtime: Runtime, clock: FakeClock, trail: list[str], raw: Raw, caplog: pytest.LogCaptureFixture
) -> None:
    """The second review's attack: delete the newest checkpoint, rewrite what it sealed, reset
    the watermark, and let the gateway's own timer re-sign the rewrite."""
    later = await decided(runtime, 1, clock, run="later")
    newest = await runtime.audit.seal()
    await raw.run("DELETE FROM audit_leaves WHERE checkpoint = $1", newest.seq)
    await raw.run("DELETE FROM audit_checkpoints WHERE seq = $1", newest.seq)
    await raw.run("UPDATE events SET actor = 'operator:mallory' WHERE approval_id = $1 AND kind = 'approved'", *later)
    await raw.rechain(later[0])
    await raw.run("UPDATE audit_seal SET events_upto = 0" if raw.sqlite else "UPDATE audit_heads SET sealed_seq = 0")
    with caplog.at_level("ERROR", logger="gateway.audit"):
        assert await runtime.audit.run_once() == 0  # the minute timer refuses, loudly
    assert "checkpoints were deleted" in caplog.text and f"checkpoint {newest.seq} ({newest.hash})" in caplog.text
    with pytest.raises(CheckpointsDeleted):
        await runtime.audit.seal()
    clock.advance(HOUR)  # unsealed since: verify fails
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.found.startswith("not sealed")
    problem = (await runtime.audit.verify(anchor=(newest.seq, newest.hash))).problem
    assert problem is not None and problem.found.startswith("no such checkpoint") and problem.checkpoint == newest.seq


async def test_unchained_event_in_front_of_a_chain_is_caught(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    """An event without a hash passes as one from before the chain (schema < 13) only where it
    can be one: nothing comes before an approval's `suspended`."""
    victim = trail[2]
    await raw.run(
        "INSERT INTO events (id, approval_id, kind, at, actor, channel, data) VALUES (-1, $1, 'vote', 1.0,"
        " 'operator:mallory', NULL, '{}')",
        victim,
    )
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, 1)
    assert problem.expected == "no event before `suspended`" and "1 unchained" in problem.found


async def test_events_newer_than_the_newest_checkpoint_are_not_proven_yet(
    runtime: Runtime, clock: FakeClock, trail: list[str]
) -> None:
    await decided(runtime, 1, clock, run="later")
    verdict = await runtime.audit.verify()
    assert verdict.ok, verdict.problem
    assert "events not sealed yet" in verdict.summary and "not yet proven" in verdict.summary
    clock.advance(HOUR)  # no gateway sealed them in an hour: deleted checkpoints look the same
    assert not (await runtime.audit.verify()).ok
    await runtime.audit.seal()
    verdict = await runtime.audit.verify()
    assert verdict.ok and "not sealed" not in verdict.summary, verdict


async def test_truncate_is_refused_on_postgres(runtime: Runtime, clock: FakeClock, db_url: str) -> None:
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite has no TRUNCATE (a DELETE fires the row triggers)")
    await decided(runtime, 1, clock)
    await runtime.audit.seal()
    conn = await asyncpg.connect(db_url)
    try:
        for table in ("events", "audit_checkpoints", "audit_leaves"):
            with pytest.raises(asyncpg.RaiseError, match="append-only"):
                await conn.execute(f"TRUNCATE {table} CASCADE")
    finally:
        await conn.close()
    assert (await runtime.audit.verify()).ok


async def test_a_rewrite_dated_in_the_future_is_caught(
    runtime: Runtime, clock: FakeClock, trail: list[str], raw: Raw
) -> None:
    """Deleting the checkpoints and dating the rewritten events later than now would make them
    look merely unsealed (newer than every checkpoint)."""
    victim = trail[0]
    await raw.run("UPDATE events SET at = at + 86400 WHERE approval_id = $1", victim)
    await raw.rechain(victim)
    await raw.run("DELETE FROM audit_leaves")
    await raw.run("DELETE FROM audit_checkpoints")
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, 1)
    assert problem.expected.startswith("dated before now")


async def test_each_checkpoint_logs_its_hash(
    runtime: Runtime, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The log is a copy of each checkpoint's hash outside the database (docs/audit.md)."""
    await decided(runtime, 1, clock)
    with caplog.at_level("INFO", logger="gateway.audit"):
        made = await runtime.audit.seal()
    assert f"audit checkpoint {made.seq}: " in caplog.text and f"hash {made.hash}" in caplog.text


@pytest.mark.parametrize("jump", [86400.0, -86400.0], ids=["ahead", "behind"])
async def test_a_host_clock_wrong_for_a_while_then_corrected_breaks_nothing(
    runtime: Runtime, clock: FakeClock, tmp_path: Path, jump: float
) -> None:
    """The fourth review's #2. The clock a day off while the gateway writes and seals, then
    corrected (NTP, a VM resumed). A checkpoint is dated as the host says (a pinned date held
    every later one in the future, and failed each newer event as unsealed); signed dates are
    not refused as 'after now'; a range is one chain by seq, not a hole where a date went back."""
    await decided(runtime, 1, clock)
    await runtime.audit.seal()
    start = clock.now().timestamp()
    clock.advance(jump)
    await decided(runtime, 1, clock, run="off")
    await runtime.audit.checkpoint()
    clock.advance(-jump + 120)
    for i in range(2):
        await decided(runtime, 1, clock, run=f"after-{i}")
        clock.advance(60)
        await runtime.audit.checkpoint()
    await decided(runtime, 1, clock, run="last")  # not sealed yet
    clock.advance(10)
    key = runtime.audit.public_key
    assert key is not None
    for since in (None, start - 60):
        verdict = await runtime.audit.verify(since=since)
        assert verdict.ok, verdict.problem
        lines = [line async for line in runtime.audit.export(since=since)]
        in_file = verify_lines(lines, load_public_key(key))
        assert in_file.ok and in_file.unsealed == 6, (in_file.problem, in_file.summary)
        assert "4 checkpoints" in in_file.summary, in_file.summary
        done = run_script(tmp_path, write(tmp_path, lines), key)
        assert (done.returncode, done.stdout.strip()) == (3, "unbroken, not proven: 6 events sealed by no checkpoint")
