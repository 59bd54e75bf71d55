"""The audit checker, pure: the same rules for the database (`audit verify`) and for an export
(`audit verify --file`), over the records and hashes of gateway/core/audit.py.

Beyond the links: a checkpoint seals every head that moved before it, so an event dated before
the newest checkpoint (less `SEAL_GRACE`) that no checkpoint seals means deleted checkpoints;
an anchor (a checkpoint known from outside the database) must be there, and nothing it had not
sealed may claim to be older than it. docs/audit.md has the threat model.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gateway.core.audit import GENESIS, ChainEvent, Checkpoint, checkpoint_hash, event_hash, event_hash_v1, merkle_root
from gateway.core.audit_rows import RowState, row_problem

__all__ = ["FIRST_TS", "LAST_TS", "SEALER_GRACE", "SEAL_GRACE", "Break", "Checker", "error_text"]

# Seconds an event may be dated before the checkpoint that did not seal it: its use case took
# its time, then waited for the writer (or, on PostgreSQL, held its head row while the sealer
# skipped it); a timeout storm dates each event at its tick's start, and 10^6 due at once take
# minutes. An event forged within it passes as a recent one.
SEAL_GRACE = 900.0
# Seconds past `checkpoint_every` by which a running gateway has sealed an event it wrote, where
# no checkpoint is dated after the event (so no timeout storm is under way, whose events are
# dated at its start and committed minutes later, with checkpoints between): the sealer's own
# round, a slow commit, and a verifying host's clock a few minutes ahead of the gateway's. Where
# a signing key is known, an event older than that, with no checkpoint after it, is a break:
# every checkpoint after it was deleted, or no gateway sealed (one that was killed seals at its
# next start, before it serves). An event forged within it passes as a recent one.
SEALER_GRACE = 300.0
FIRST_TS, LAST_TS = -62135596800.0, 253402300799.0  # 0001-01-01 and 9999-12-31T23:59:59, UTC


@dataclass(frozen=True, slots=True)
class Break:
    """The first broken link: where, what was expected, what was found."""

    approval_id: str | None
    seq: int | None
    expected: str
    found: str
    checkpoint: int | None = None

    def __str__(self) -> str:
        where = f"checkpoint {self.checkpoint}" if self.checkpoint is not None else ""
        if self.approval_id is not None:
            seq = "" if self.seq is None else f" seq {self.seq}"
            where = (where + ", " if where else "") + f"approval {self.approval_id}{seq}"
        what = f"expected {self.expected}, found {self.found}"
        return f"{where}: {what}" if where else what


@dataclass
class Checker:
    """Checks events (in approval, id order), the live heads and the checkpoints; keeps the
    first `Break`. The same rules for the database (`audit verify`) and for an export file
    (`audit verify --file`). With a range (`since`), the checkpoint chain may start mid-way."""

    public_key: Ed25519PublicKey | None = None
    since: float = -math.inf  # events dated before it were sealed by checkpoints outside the range
    sealed_before: float | None = None  # every event dated before it must be sealed (`seal_deadline`)
    dated_until: float = float("inf")  # no unsealed event may be dated after it (the database's now)
    stale_before: float | None = None  # with a key: an unsealed event before it needs a checkpoint after it
    anchor: tuple[int, str] | None = None  # a checkpoint (seq, hash) known from outside: the log, an export
    chain_start: int | None = None  # the first chained event id (the database): no unhashed event after it
    problem: Break | None = None
    events: int = 0
    legacy: int = 0
    approvals: int = 0
    rows: int = 0  # approvals rows compared with their events
    checkpoints: int = 0
    unsigned: int = 0
    unsealed: int = 0
    newest: Checkpoint | None = None
    _seen: dict[tuple[str, int], str] = field(default_factory=dict)  # sealed seqs found: hash
    _wanted: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)  # leaf -> (hash, checkpoint)
    _sealed: dict[str, int] = field(default_factory=dict)  # approval -> the highest seq a checkpoint sealed
    _every: float = 0.0  # the gateway's checkpoint_every (seconds), for the stale rule's message

    def fail(self, problem: Break) -> None:
        if self.problem is None:
            self.problem = problem

    def expect_leaves(self, checkpoint: Checkpoint) -> None:
        for lf in checkpoint.leaves:
            if not (isinstance(lf.approval_id, str) and type(lf.seq) is int and isinstance(lf.hash, str)):
                self.fail(Break(None, None, "leaves of (approval id, seq, hash)", repr(lf), checkpoint.seq))
                continue  # SQLite keeps a value of any type in any column
            self._wanted[(lf.approval_id, lf.seq)] = (lf.hash, checkpoint.seq)

    def approval(
        self,
        approval_id: str,
        events: Sequence[ChainEvent],
        head: tuple[int, str] | None = None,
        *,
        heads: bool = False,
        row: RowState | None = None,
        rows: bool = False,
    ) -> None:
        """One approval's events in id order; `heads`: also compare its live head row; `rows`:
        its approvals row (`row`, None where there is none) with what its events say."""
        self.approvals += 1
        try:
            self._approval(approval_id, events, head, heads=heads)
        except (TypeError, ValueError, OverflowError) as exc:  # a value no gateway writes: no hash to compute
            self.fail(Break(approval_id, None, "events of the types the gateway writes", error_text(exc)))
        if rows:
            self.row(approval_id, row, events)

    def row(self, approval_id: str, row: RowState | None, events: Sequence[ChainEvent]) -> None:
        """The approvals row must agree with the chain: its status, decision and args hashes."""
        self.rows += 1
        found = row_problem(row, events)
        if found is not None:
            name, expected, got = found
            self.fail(Break(approval_id, None, f"{name} {expected} (as its events say)", f"{got} in its approvals row"))

    def _approval(
        self, approval_id: str, events: Sequence[ChainEvent], head: tuple[int, str] | None, *, heads: bool
    ) -> None:
        seq, prev, legacy_before = 0, GENESIS, 0
        for e in events:
            if e.hash is None:
                self._unhashed(approval_id, seq, e)
                legacy_before += 1
                continue
            self.events += 1
            if not FIRST_TS <= e.at <= LAST_TS:  # NaN too: no hash to compute, no date to show
                self.fail(
                    Break(approval_id, seq + 1, "a time between the years 1 and 9999", f"{e.at!r} (event id {e.id})")
                )
                seq, prev = e.seq or seq + 1, e.hash
                continue
            if e.seq != seq + 1:
                self.fail(Break(approval_id, seq + 1, f"seq {seq + 1}", f"seq {e.seq} (event id {e.id})"))
            fields = (approval_id, e.kind, e.actor, e.at, e.channel, e.data)
            computed = event_hash(prev, e.seq or 0, *fields)
            if computed != e.hash and event_hash_v1(prev, e.seq or 0, *fields) != e.hash:
                self.fail(Break(approval_id, e.seq, computed, f"{e.hash} (event id {e.id})"))
            if not seq and legacy_before and e.kind == "suspended":  # an approval's first event, always
                self.fail(
                    Break(approval_id, 1, "no event before `suspended`", f"{legacy_before} unchained (event id {e.id})")
                )
            seq, prev = e.seq or seq + 1, e.hash
            if (approval_id, seq) in self._wanted:
                self._seen[(approval_id, seq)] = prev
        self._check_sealing(approval_id, [e for e in events if e.hash is not None])
        if not heads:
            return
        if head is None and seq:
            self.fail(Break(approval_id, seq, f"a head row at seq {seq}", "none"))
        elif head is not None and head != (seq, prev):
            found = f"last event seq {seq} {prev}" if seq else "no events"
            self.fail(Break(approval_id, head[0], f"head {head[1]}", found))

    def _unhashed(self, approval_id: str, seq: int, e: ChainEvent) -> None:
        """Written before migration 13, so only before the approval's chain, and before the
        database's first chained event: else its hash was cleared by hand."""
        self.legacy += 1
        if seq:
            self.fail(Break(approval_id, seq + 1, "a hash (its chain had started)", f"none (event id {e.id})"))
        elif self.chain_start is not None and e.id > self.chain_start:  # a whole chain unhashed
            started = f"a hash (every event after id {self.chain_start}, the first chained one, has one)"
            why = "written by a replica older than schema 13 during an upgrade, or its hash cleared by hand"
            self.fail(Break(approval_id, 1, started, f"none (event id {e.id}): {why}"))

    def checkpoint_chain(self, checkpoints: Sequence[Checkpoint]) -> None:
        try:
            self._checkpoint_chain(checkpoints)
        except (TypeError, ValueError, OverflowError) as exc:  # as for events
            self.fail(Break(None, None, "checkpoints of the types the gateway writes", error_text(exc)))

    def _checkpoint_chain(self, checkpoints: Sequence[Checkpoint]) -> None:
        prev: Checkpoint | None = None
        for c in checkpoints:
            self.checkpoints += 1
            if type(c.seq) is not int or type(c.heads) is not int or type(c.at) is not float or not math.isfinite(c.at):
                raise TypeError(f"checkpoint {c.seq!r}: a seq, date or head count of another type ({c.at!r})")
            want_prev = prev.hash if prev is not None else (None if self.since > -math.inf else GENESIS)
            if want_prev is not None and c.prev != want_prev:
                self.fail(Break(None, None, f"prev {want_prev}", f"prev {c.prev}", checkpoint=c.seq))
            if prev is not None and c.seq != prev.seq + 1:
                self.fail(Break(None, None, f"checkpoint {prev.seq + 1}", f"checkpoint {c.seq}", checkpoint=c.seq))
            root = merkle_root((lf.approval_id, lf.seq, lf.hash) for lf in c.leaves)
            if root != c.root or len(c.leaves) != c.heads:
                self.fail(
                    Break(None, None, f"root {c.root} of {c.heads} heads", f"root {root} of {len(c.leaves)}", c.seq)
                )
            digest = checkpoint_hash(c.prev, c.seq, c.at, c.root, c.heads)
            if digest != c.hash:
                self.fail(Break(None, None, digest, c.hash, checkpoint=c.seq))
            if c.signature is None and self.public_key is not None:  # stripped, or signed by nobody
                self.fail(Break(None, None, "a signature of the audit key", "none", checkpoint=c.seq))
            if c.signature is None:
                self.unsigned += 1
            elif self.public_key is not None and not _signed_by(self.public_key, c.hash, c.signature):
                self.fail(Break(None, None, "a valid Ed25519 signature of the audit key", "a bad signature", c.seq))
            self._sealing(c)
            prev = self.newest = c
        if self.anchor is not None:
            seq, digest = self.anchor
            where = "no such checkpoint in the range checked (deleted, or before --since / the export's range)"
            self.fail(Break(None, None, f"checkpoint {seq} with hash {digest} (the anchor)", where, seq))

    def _sealing(self, c: Checkpoint) -> None:
        """What `c` seals; whether it is the anchor, with the anchor's hash."""
        for lf in c.leaves:
            self._sealed[lf.approval_id] = max(lf.seq, self._sealed.get(lf.approval_id, 0))
        if self.anchor is not None and c.seq == self.anchor[0]:
            if c.hash != self.anchor[1]:
                self.fail(Break(None, None, f"hash {self.anchor[1]} (the anchor)", f"hash {c.hash}", c.seq))
            self.anchor = None

    def seal_deadline(self, now: float | None = None, every: float = 0.0) -> None:
        """Set `sealed_before`, after `checkpoint_chain`: a checkpoint seals every head that moved
        before it, so an event dated before the newest checkpoint (less `SEAL_GRACE`, for the
        writes in flight) must be sealed; with `now` (the database, where a gateway seals every
        `every` seconds), so must one older than that; and where the key is known, one older
        than `every` + SEALER_GRACE with no checkpoint dated after it (`_stale`). With neither
        (an export of a range that holds no checkpoint), nothing is required, and nothing proven."""
        candidates = [self.newest.at - SEAL_GRACE] if self.newest is not None else []
        if now is not None:
            candidates.append(now - every - SEAL_GRACE)
            self.dated_until = now + SEAL_GRACE  # else a rewrite dated in the future passes as unsealed
            if self.public_key is not None:  # unsigned checkpoints can be rewritten at will: no use
                self.stale_before, self._every = now - every - SEALER_GRACE, every
        self.sealed_before = max(candidates) if candidates else None

    def _check_sealing(self, approval_id: str, events: Sequence[ChainEvent]) -> None:
        """An event no checkpoint sealed must be newer than `sealed_before` (else checkpoints were
        deleted, or the gateway has not sealed), and not dated after `dated_until`. With a
        range (`since`): an approval is in it for an event dated in it or a sealed head, and only
        the chain's part before its first event in the range, of an approval with no sealed head
        here, was sealed outside it (what follows an event in the range, or a sealed head, was not)."""
        sealed = self._sealed.get(approval_id, 0)
        first = next((e.seq or 0 for e in events if e.at >= self.since), None)
        if self.since > -math.inf and not sealed and events and first is None:
            self.fail(Break(approval_id, None, f"an event since {_when(self.since)} or a sealed head", "neither"))
        for e in events:
            if (e.seq or 0) <= sealed or (not sealed and first is not None and (e.seq or 0) < first):
                continue  # sealed here, or before the range (a signed date is the host's, even a wrong one)
            if not sealed and first is None:
                continue  # the approval is refused above
            if e.at > self.dated_until:
                self.fail(Break(approval_id, e.seq, f"dated before now ({_when(self.dated_until)})", _when(e.at)))
            self.unsealed += 1
            if self._stale(e):
                within = f"a running gateway seals within {self._every:g} s + {SEALER_GRACE:g} s"
                why = "checkpoints deleted, or no gateway has run since (one seals when it starts)"
                found = f"not sealed, dated {_when(e.at)} (event id {e.id}), and no checkpoint since: {why}"
                self.fail(Break(approval_id, e.seq, f"sealed by a checkpoint ({within})", found))
            if self.sealed_before is not None and e.at < self.sealed_before:
                rule = "none here seals anything" if self.newest is None else "every event dated before"
                rule += "" if self.newest is None else f" {_when(self.sealed_before)} is"
                why = "no checkpoint" if self.newest is None else "checkpoints deleted, or written behind the gateway"
                self.fail(
                    Break(
                        approval_id,
                        e.seq,
                        f"sealed by a checkpoint ({rule})",
                        f"not sealed, dated {_when(e.at)} (event id {e.id}): {why}",
                    )
                )

    def _stale(self, e: ChainEvent) -> bool:
        """Unsealed, older than `checkpoint_every` + SEALER_GRACE, and no checkpoint dated after
        it (a storm's early-dated events have checkpoints after them while it commits)."""
        if self.stale_before is None or e.at >= self.stale_before:
            return False
        return self.newest is None or self.newest.at < e.at

    def finish(self) -> Break | None:
        """After every event: each sealed head must have been found, with its hash."""
        for (approval_id, seq), (digest, checkpoint) in sorted(self._wanted.items()):
            found = self._seen.get((approval_id, seq))
            if found != digest:
                self.fail(Break(approval_id, seq, digest, found or "no such event", checkpoint=checkpoint))
        return self.problem

    def summary(self) -> str:
        parts = [f"{self.events} events of {self.approvals} approvals", f"{self.checkpoints} checkpoints"]
        if self.unsigned:
            parts.append(f"{self.unsigned} unsigned")
        if self.rows:
            parts.append(f"{self.rows} approvals rows checked against their events")
        if self.legacy:
            parts.append(f"{self.legacy} events from before the chain (not covered)")
        if self.since > -math.inf:
            parts.append(f"the range since {_when(self.since)} (check it is the one asked for)")
        if self.unsealed:
            newest = f" (newest at {_when(self.newest.at)})" if self.newest is not None else ""
            parts.append(f"{self.unsealed} events not sealed yet, newer than every checkpoint{newest}: not yet proven")
        if self.newest is not None:  # to compare with one kept outside: what a cut tail (or a deletion) changes
            c = self.newest
            parts.append(f"newest checkpoint {c.seq} of {_when(c.at)} (--anchor {c.seq}:{c.hash})")
        return ", ".join(parts)


def _when(ts: float) -> str:
    if not FIRST_TS <= ts <= LAST_TS:  # what a tamperer wrote may be no date at all
        return f"{ts!r} (epoch seconds)"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _signed_by(key: Ed25519PublicKey, digest_hex: str, signature: str) -> bool:
    try:
        key.verify(base64.b64decode(signature), digest_hex.encode("ascii"))
    except (InvalidSignature, ValueError, TypeError):  # TypeError: a signature that is no text
        return False
    return True
