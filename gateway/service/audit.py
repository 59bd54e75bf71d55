"""Audit use cases: seal a checkpoint (on a timer and on demand), verify the database, export
JSON Lines, verify an export offline. The rules are gateway/core/audit_check.py's; the design and
the threat model are in docs/audit.md.

The export (format version 1) is one JSON object per line: a `header`, then every `event` of
the approvals it covers (whole chains, by approval then id), then every `checkpoint` taken in
the range, each with its leaves (the sealed heads). It covers the approvals with an event in
[since, until] and those sealed by a checkpoint in it, so that every leaf it holds can be
checked against an event it holds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gateway.core import loops
from gateway.core.audit import (
    EXPORT_VERSION,
    ChainEvent,
    Checkpoint,
    Leaf,
    load_private_key,
    new_checkpoint,
    public_key_hex,
)
from gateway.core.audit_check import FIRST_TS, LAST_TS, Break, Checker, error_text
from gateway.core.audit_rows import RowState
from gateway.core.clock import Clock, iso
from gateway.core.errors import CheckpointsDeleted
from gateway.store import Store

__all__ = ["AuditService", "ChainCheck", "verify_lines"]

log = logging.getLogger("gateway.audit")
_FOREVER = math.inf  # an `until` past every timestamp, even one a tamperer wrote (epoch seconds)
_CHUNK = 200  # approvals whose events are read (and checked, or exported) at a time


@dataclass(frozen=True, slots=True)
class ChainCheck:
    problem: Break | None
    summary: str
    unsealed: int = 0  # events no checkpoint in scope seals: unbroken, not yet proven

    @property
    def ok(self) -> bool:
        return self.problem is None


class AuditService:
    def __init__(self, store: Store, clock: Clock, signing_key: str = "", *, every: float = 60.0) -> None:
        self.store, self.clock, self.every = store, clock, every
        self.key: Ed25519PrivateKey | None = load_private_key(signing_key) if signing_key else None
        # The newest checkpoint this process wrote: a database whose newest is older lost some,
        # and sealing on would sign whatever was rewritten under them (kept in memory only: a
        # restart trusts the database again; the log keeps every hash).
        self.last: Checkpoint | None = None

    @property
    def public_key(self) -> str | None:
        return public_key_hex(self.key) if self.key is not None else None

    # ---------------------------------------------------------------- checkpoints
    async def seal(self) -> Checkpoint:
        """A checkpoint now, on demand (empty if no head moved: it still signs the chain)."""
        made = await self.checkpoint(force=True)
        assert made is not None
        return made

    async def checkpoint(self, *, force: bool = False) -> Checkpoint | None:
        """Seal the heads that moved since the last checkpoint (None: none moved, unless `force`)."""
        at = self.clock.now().timestamp()

        def make(prev: Checkpoint | None, leaves: Sequence[Leaf]) -> Checkpoint:
            last = self.last  # a newer one (another replica's) is fine; an older one, or another at its seq, is not
            if last is not None and (
                prev is None or prev.seq < last.seq or (prev.seq == last.seq and prev.hash != last.hash)
            ):
                found = "none" if prev is None else f"checkpoint {prev.seq} ({prev.hash})"
                raise CheckpointsDeleted(found, f"{last.seq} ({last.hash})")
            if prev is not None and at < prev.at:  # dated as the host says: a pinned date would
                # hold every later checkpoint in the future, and fail the events after it as unsealed
                log.warning("audit: the clock is %.0f s behind checkpoint %d's date", prev.at - at, prev.seq)
            return new_checkpoint(prev, at, leaves, self.key)

        made = await self.store.write_checkpoint(make, force=force)
        if made is not None:
            self.last = made
            # its hash in the log: a copy outside the database, against which deleted checkpoints show
            unsigned = "" if self.key else " (unsigned)"
            log.info("audit checkpoint %d: %d heads sealed%s, hash %s", made.seq, made.heads, unsigned, made.hash)
        return made

    async def run_once(self) -> int:
        try:
            return 1 if await self.checkpoint() is not None else 0
        except CheckpointsDeleted as exc:  # every minute, until an operator looks: verify fails meanwhile
            log.error("audit: %s", exc)
            return 0

    async def run_forever(self) -> None:
        async def once_per_interval() -> int:
            # 0 whatever it sealed: the loop runs at once again after a round that did work, and
            # under a steady load every round finds moved heads (back to back, not every minute)
            await self.run_once()
            return 0

        await loops.poll_forever(once_per_interval, asyncio.Event(), self.every, log)

    # ---------------------------------------------------------------- verify and export
    async def verify(
        self,
        since: float | None = None,
        public_key: Ed25519PublicKey | None = None,
        anchor: tuple[int, str] | None = None,
    ) -> ChainCheck:
        """Every chain the range covers from its first event, their live heads (PostgreSQL) or the
        holes in the event ids (SQLite), the checkpoints taken since `since` (linked, their
        roots, signed by the key) and their leaves."""
        key = public_key or (self.key.public_key() if self.key is not None else None)
        low = since if since is not None else -_FOREVER
        start = await self.store.audit_chain_start()
        checker = Checker(key, since if since is not None else -math.inf, anchor=anchor, chain_start=start)
        checkpoints = await self.store.audit_checkpoints(low, _FOREVER)
        for c in checkpoints:
            checker.expect_leaves(c)
        checker.checkpoint_chain(checkpoints)
        checker.seal_deadline(self.clock.now().timestamp(), self.every)  # a gateway seals every `every`
        ids = await self.store.audit_approvals(low, _FOREVER, full=since is None)
        for i in range(0, len(ids), _CHUNK):
            chunk = ids[i : i + _CHUNK]
            chains = await self.store.audit_chains(chunk)  # one snapshot: a live gateway writes on
            by = {a: list(es) for a, es in groupby(chains.events, key=lambda e: e.approval_id)}
            for approval_id in chunk:
                head = chains.heads.get(approval_id) if chains.heads is not None else None
                row, readable = _row(checker, approval_id, chains.rows.get(approval_id))
                events = by.get(approval_id, ())
                checker.approval(approval_id, events, head, heads=chains.heads is not None, row=row, rows=readable)
        problem = checker.finish()  # a broken chain or sealed head names its approval: it comes first
        missing = await self.store.audit_missing_event() if problem is None else None
        if missing is not None:
            problem = Break(None, None, f"event id {missing} (event ids have no holes)", "no such event")
        return ChainCheck(problem, checker.summary())

    async def export(self, since: float | None = None, until: float | None = None) -> AsyncIterator[str]:
        """The export's lines (each ends with a newline), read a chunk of approvals at a time."""
        low, high = since if since is not None else -_FOREVER, until if until is not None else _FOREVER
        header = {
            "type": "header",
            "format": "hitl-gateway-audit",
            "version": EXPORT_VERSION,
            "since": since,
            "until": until,
            "exported_at": iso(self.clock.now()),
            "public_key": self.public_key,
        }
        yield _line(header)
        ids = await self.store.audit_approvals(low, high, full=False)
        start = await self.store.audit_chain_start()
        for i in range(0, len(ids), _CHUNK):
            chains = await self.store.audit_chains(ids[i : i + _CHUNK])  # rows as of the events
            for e in chains.events:
                # Events from before the chain prove nothing; an unhashed one after its start was
                # unchained by hand, and goes in the file for its verifier to refuse.
                if e.hash is not None or (start is not None and e.id > start):
                    yield _line(e.to_json())
            for approval_id, columns in chains.rows.items():  # each row's state, for the file's verifier
                yield _line(_row_line(approval_id, columns))
        for c in await self.store.audit_checkpoints(low, high):
            yield _line(c.to_json())


def _row(checker: Checker, approval_id: str, columns: tuple[Any, ...] | None) -> tuple[RowState | None, bool]:
    """An approvals row as the checker compares it (None: no row), and whether to compare it
    (not a row with values no gateway writes: that is the break)."""
    try:
        return (RowState.from_columns(*columns) if columns is not None else None), True
    except (ValueError, TypeError) as exc:
        checker.fail(Break(approval_id, None, "an approvals row of the types the gateway writes", error_text(exc)))
        return None, False


def _row_line(approval_id: str, columns: tuple[Any, ...]) -> dict[str, Any]:
    try:
        return RowState.from_columns(*columns).to_json(approval_id)
    except (ValueError, TypeError) as exc:  # in the file as unreadable: its verifier names the line
        return {"type": "approval", "id": approval_id, "unreadable": error_text(exc)}


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def verify_lines(
    lines: Iterable[str], public_key: Ed25519PublicKey | None, anchor: tuple[int, str] | None = None
) -> ChainCheck:
    """An export checked with no database: the same checker, the checkpoint chain anchored at
    the export's first checkpoint (an export may start mid-way)."""
    checker = Checker(public_key=public_key, anchor=anchor)
    events: list[ChainEvent] = []
    checkpoints: list[Checkpoint] = []
    rows: dict[str, RowState] = {}
    header, n = False, 1  # n: the line being read
    try:
        for line in lines:
            if line.strip():
                _record(line, checker, (events, checkpoints, rows), header)
                header = True
            n += 1
    except UnicodeDecodeError:  # from reading the file, before the line is whole
        return ChainCheck(Break(None, None, "a valid export line", f"line {n}: not UTF-8"), "unreadable")
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
        return ChainCheck(Break(None, None, "a valid export line", f"line {n}: {exc}"), "unreadable")
    if not header:
        return ChainCheck(Break(None, None, "a header first", "none"), "unreadable")
    if public_key is None:
        return ChainCheck(Break(None, None, "a public key", "none given"), "not checked")
    for c in checkpoints:
        checker.expect_leaves(c)
    checker.checkpoint_chain(checkpoints)
    checker.seal_deadline()  # from the file's newest checkpoint, if any
    for approval_id, group in _by_approval(events):  # an export without `approval` lines checks no rows
        checker.approval(approval_id, group, row=rows.get(approval_id), rows=approval_id in rows)
    return ChainCheck(checker.finish(), checker.summary(), checker.unsealed)


_Records = tuple[list[ChainEvent], list[Checkpoint], dict[str, RowState]]


def _record(line: str, checker: Checker, into: _Records, header: bool) -> None:
    """One line of an export, parsed into events, checkpoints or rows (the header into `checker`);
    a line of another type is skipped (a later format's)."""
    events, checkpoints, rows = into
    record = json.loads(line)
    kind = record["type"]
    if (kind == "header") == header:  # exactly one, first: its `since` is the range checked
        raise ValueError("one header, the first line" if header else "a header first")
    if kind == "header":
        _check_header(record, checker)
    elif kind == "event":
        events.append(_event(record))
    elif kind == "checkpoint":
        checkpoints.append(Checkpoint.from_json(record))
    elif kind == "approval":
        if not isinstance(record["id"], str) or record["id"] in rows:
            raise ValueError(f"one approval line per approval id, not {record['id']!r} again")
        rows[record["id"]] = RowState.from_json(record)


def _check_header(record: dict[str, Any], checker: Checker) -> None:
    """A partial export (a `since`) may start its checkpoint chain mid-way, and events before
    `since` were sealed by checkpoints outside it; a whole one starts at the first checkpoint."""
    if record.get("version") != EXPORT_VERSION:
        raise ValueError(f"export format version {record.get('version')} (this verifier reads {EXPORT_VERSION})")
    since = record.get("since")
    if since is not None and (
        isinstance(since, bool) or not isinstance(since, int | float) or not FIRST_TS <= since <= LAST_TS
    ):
        raise ValueError(f"since must be epoch seconds (years 1 to 9999) or null, not {since!r}")
    if since is not None:
        checker.since = float(since)


def _by_approval(events: list[ChainEvent]) -> Iterator[tuple[str, list[ChainEvent]]]:
    grouped: dict[str, list[ChainEvent]] = {}
    for e in events:
        grouped.setdefault(e.approval_id, []).append(e)
    for approval_id, group in grouped.items():
        yield approval_id, sorted(group, key=lambda e: e.id)


def _event(d: dict[str, Any]) -> ChainEvent:
    if d.get("hash") is None:
        raise ValueError(f"event {d.get('id')!r} has no hash (an export holds chained events only)")
    for name in ("actor", "channel"):
        if not isinstance(d[name], str | None):
            raise ValueError(f"event {name} must be a string or null, not {d[name]!r}")
    return ChainEvent(
        int(d["id"]),
        str(d["approval_id"]),
        int(d["seq"]),
        str(d["kind"]),
        float(d["at"]),  # a time that is no date is the checker's to name
        d["actor"],
        d["channel"],
        str(d["data"]),
        str(d["hash"]),
    )
