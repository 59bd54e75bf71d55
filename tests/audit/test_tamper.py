"""Each way a database administrator rewrites history is caught by `audit verify`, which names
the place: approval id, seq, what it expected and what it found (both backends)."""

from __future__ import annotations

import pytest

from gateway.core.audit import GENESIS, checkpoint_hash, load_public_key, merkle_root
from gateway.runtime import Runtime
from gateway.service.audit import verify_lines
from gateway.testing import FakeClock
from tests.audit.conftest import Raw, decided

pytestmark = pytest.mark.subprocess  # every test here starts a process


async def test_clean_trail_verifies(runtime: Runtime, trail: list[str]) -> None:
    verdict = await runtime.audit.verify()
    assert verdict.ok and f"of {len(trail)} approvals" in verdict.summary


async def test_changed_actor(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    victim = trail[1]
    seq = (await raw.run("SELECT seq FROM events WHERE approval_id = $1 AND kind = 'approved'", victim))[0][0]
    await raw.run("UPDATE events SET actor = 'operator:mallory' WHERE approval_id = $1 AND seq = $2", victim, seq)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, seq)
    assert f"approval {victim} seq {seq}: expected " in str(problem) and "found " in str(problem)


async def test_deleted_event(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    victim = trail[0]
    await raw.run("DELETE FROM events WHERE approval_id = $1 AND seq = 2", victim)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, 2)
    assert problem.expected == "seq 2" and problem.found.startswith("seq 3")


async def test_deleted_last_event(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    victim = trail[2]
    last = (await raw.run("SELECT MAX(seq) FROM events WHERE approval_id = $1", victim))[0][0]
    await raw.run("DELETE FROM events WHERE approval_id = $1 AND seq = $2", victim, last)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, last)


async def test_deleted_approval(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    """Every event of one approval and its head row gone: the signed checkpoint still names it."""
    victim = trail[1]
    last = (await raw.run("SELECT MAX(seq) FROM events WHERE approval_id = $1", victim))[0][0]
    await raw.run("DELETE FROM events WHERE approval_id = $1", victim)
    if not raw.sqlite:  # SQLite has no head rows (a head is the last event)
        await raw.run("DELETE FROM audit_heads WHERE approval_id = $1", victim)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, last)
    assert problem.found == "no such event" and problem.checkpoint == 1


async def test_reordered_events(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    victim = trail[0]
    cols = "kind, at, actor, channel, data, hash"
    a, b = await raw.run(f"SELECT id, {cols} FROM events WHERE approval_id = $1 AND seq IN (2, 3) ORDER BY seq", victim)
    for row, other in ((a, b), (b, a)):
        await raw.run(
            "UPDATE events SET kind = $1, at = $2, actor = $3, channel = $4, data = $5, hash = $6 WHERE id = $7",
            *other[1:],
            row[0],
        )
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, 2)


async def test_recomputed_without_the_key(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    """The tamperer rewrites an actor and recomputes everything a hash covers (the chain, the
    head, the leaf, the root, the checkpoint hash): only the signature cannot be redone."""
    victim = trail[1]
    await raw.run("UPDATE events SET actor = 'operator:mallory' WHERE approval_id = $1 AND kind = 'approved'", victim)
    prev = await raw.rechain(victim)
    await raw.run("UPDATE audit_leaves SET hash = $1 WHERE approval_id = $2", prev, victim)
    leaves = await raw.run("SELECT approval_id, seq, hash FROM audit_leaves WHERE checkpoint = 1")
    root = merkle_root((a, s, h) for a, s, h in leaves)
    (at,) = (await raw.run("SELECT at FROM audit_checkpoints WHERE seq = 1"))[0]
    digest = checkpoint_hash(GENESIS, 1, at, root, len(leaves))
    await raw.run("UPDATE audit_checkpoints SET root = $1, hash = $2 WHERE seq = 1", root, digest)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.checkpoint == 1 and problem.found == "a bad signature"
    assert str(problem).startswith("checkpoint 1: expected a valid Ed25519 signature")


async def test_stripped_signatures(runtime: Runtime, trail: list[str], raw: Raw) -> None:
    """Unsigned checkpoints (signatures removed) fail wherever the audit key is known."""
    await raw.run("UPDATE audit_checkpoints SET signature = NULL, key_id = NULL")
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.checkpoint == 1 and problem.found == "none"


async def test_an_unsealed_chain_unhashed_to_pass_as_legacy(
    runtime: Runtime, trail: list[str], raw: Raw, clock: FakeClock
) -> None:
    """The fourth review's #1: an approval no checkpoint sealed yet, its hashes and seqs cleared
    (as events from before migration 13 have none), then edited at will. Events without a hash
    come only before the first chained one: this one is after it, in the database and in an export."""
    [victim] = await decided(runtime, 1, clock, run="fresh")
    await raw.run("UPDATE events SET hash = NULL, seq = NULL WHERE approval_id = $1", victim)
    await raw.run("UPDATE events SET actor = 'operator:mallory' WHERE approval_id = $1 AND kind = 'approved'", victim)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and (problem.approval_id, problem.seq) == (victim, 1), problem
    if raw.sqlite:  # PostgreSQL's head row for it had already failed
        assert "its hash cleared by hand" in str(problem)
    lines = [line async for line in runtime.audit.export()]
    key = runtime.audit.public_key
    assert key is not None and any(victim in line for line in lines)  # in the file, to be refused
    verdict = verify_lines(lines, load_public_key(key))
    assert not verdict.ok and "has no hash" in str(verdict.problem), verdict.summary


async def test_a_deleted_unsealed_approval_refilled_with_unhashed_rows(
    runtime: Runtime, trail: list[str], raw: Raw, clock: FakeClock
) -> None:
    """SQLite's id rule, dodged: the deleted approval's ids refilled by unhashed rows of another
    (no hole in the ids, the counter untouched). Still a break, though checkpoints seal on."""
    [victim] = await decided(runtime, 1, clock, run="fresh")
    await raw.run(
        "UPDATE events SET approval_id = 'legacy-junk', hash = NULL, seq = NULL, actor = NULL WHERE approval_id = $1",
        victim,
    )
    await raw.run("DELETE FROM approvals WHERE id = $1", victim)
    clock.advance(3600)
    await runtime.audit.seal()
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and problem.approval_id in {victim, "legacy-junk"}, problem


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("UPDATE events SET at = 'x' WHERE id = (SELECT MAX(id) FROM events)", "events of the types"),
        ("UPDATE events SET data = X'7b7d' WHERE id = (SELECT MAX(id) FROM events)", "events of the types"),
        ("UPDATE events SET actor = X'00' WHERE id = (SELECT MAX(id) FROM events)", "events of the types"),
        ("UPDATE events SET seq = 'a' WHERE id = (SELECT MAX(id) FROM events)", "found seq a"),
        ("UPDATE audit_leaves SET seq = 'a'", "leaves of (approval id, seq, hash)"),
        ("UPDATE audit_checkpoints SET heads = 'a'", "checkpoints of the types"),
        ("UPDATE audit_checkpoints SET at = 9e999 WHERE seq = 1", "checkpoints of the types"),
    ],
)
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # PostgreSQL's columns refuse them
async def test_a_value_of_another_type_is_a_break_not_a_traceback(
    runtime: Runtime, trail: list[str], raw: Raw, sql: str, named: str
) -> None:
    """The fourth review's #4, in the database: SQLite keeps a value of any type in any column.
    `audit verify` names the approval or checkpoint, never a TypeError."""
    await raw.run(sql)
    problem = (await runtime.audit.verify()).problem
    assert problem is not None and named in str(problem), problem
