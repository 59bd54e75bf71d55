"""Each way a database administrator rewrites history is caught by `audit verify`, which names
the place: approval id, seq, what it expected and what it found (both backends)."""

from __future__ import annotations

from gateway.core.audit import GENESIS, checkpoint_hash, merkle_root
from gateway.runtime import Runtime
from tests.audit.conftest import Raw


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
