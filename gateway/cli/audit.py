"""`hitl-gateway audit verify|export|checkpoint|public-key` (docs/audit.md).

`verify` exits 0 when every chain, head and checkpoint holds, 1 with the first broken link
(approval id, seq, expected, found). `verify --file F --public-key K` checks an export with no
config and no database, and exits 3 when nothing is broken but some events are sealed by no
checkpoint in the file (not proven). `--anchor SEQ:HASH`: a checkpoint that must be there.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gateway.cli.common import with_runtime
from gateway.core.audit import load_public_key
from gateway.core.durations import parse_duration
from gateway.core.errors import ConfigError
from gateway.service.audit import AuditService, ChainCheck, verify_lines
from gateway.settings import Settings


class _Offline(argparse.Action):
    """`--file`: an offline check, which needs no config (`main._run` reads `needs_config`)."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.needs_config = False


def add_parser(sub: Any) -> None:
    audit = sub.add_parser("audit", help="verify, export and sign the audit trail").add_subparsers(
        dest="action", required=True
    )
    verify = audit.add_parser("verify", help="check the hash chains and signed checkpoints (exit 1: broken)")
    verify.add_argument("--since", help="only chains and checkpoints from then: RFC 3339, or a duration ago (7d)")
    verify.add_argument("--file", action=_Offline, help="check this export instead of the database (offline)")
    verify.add_argument("--public-key", help="the audit public key (hex, PEM, or a file); needed with --file")
    verify.add_argument(
        "--anchor", help="SEQ:HASH of a checkpoint known from outside (its log line, an older export): it must be there"
    )
    export = audit.add_parser("export", help="write the events, hashes and checkpoints as JSON Lines")
    export.add_argument("--since", help="RFC 3339, or a duration ago (7d)")
    export.add_argument("--until", help="RFC 3339, or a duration ago")
    export.add_argument("--out", required=True, help="the file to write ('-': standard output)")
    audit.add_parser("checkpoint", help="seal and sign the current heads now")
    audit.add_parser("public-key", help="print the public key that checks the signed checkpoints")
    sub.choices["audit"].set_defaults(handler=run)


def when(value: str | None, name: str, now: datetime) -> float | None:
    """--since/--until: an RFC 3339 instant, or a duration before now ('7d', '90m')."""
    if value is None:
        return None
    try:
        return (now - parse_duration(value)).timestamp()
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(name, f"{value!r} is neither RFC 3339 (2026-08-02T10:00:00Z) nor a duration (7d)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def anchor_of(value: str | None) -> tuple[int, str] | None:
    """--anchor SEQ:HASH, as `audit checkpoint` and the gateway's log print them."""
    if value is None:
        return None
    seq, _, digest = value.partition(":")
    if not (seq.isascii() and seq.isdigit()) or re.fullmatch(r"[0-9a-f]{64}", digest) is None:
        raise ConfigError("--anchor", f"{value!r} is not SEQ:HASH (a checkpoint's number and its 64 hex digits)")
    return int(seq), digest


def _verify_file(path: str, key: Ed25519PublicKey, anchor: tuple[int, str] | None) -> ChainCheck:
    try:
        export = Path(path).open("rb")  # noqa: SIM115 - closed below, once read
    except OSError as exc:
        raise ConfigError("--file", f"cannot read {path}: {exc.strerror}") from None
    with export:  # each line decoded on its own: bytes that are no UTF-8 are named by their line
        return verify_lines((line.decode("utf-8") for line in export), key, anchor)


def _report(verdict: ChainCheck, *, export: bool = False) -> int:
    """0 intact, 1 broken; an export with events no checkpoint in it seals: 3, unbroken but not
    proven (a range that ends before the checkpoint after its events, or one a tamperer cut)."""
    if not verdict.ok:
        print(f"audit trail broken: {verdict.problem}", file=sys.stderr)
        return 1
    if export and verdict.unsealed:
        print(f"audit trail unbroken, not proven: {verdict.summary}", file=sys.stderr)
        return 3
    print(f"audit trail intact: {verdict.summary}")
    return 0


async def run(args: argparse.Namespace, settings: Settings | None) -> int:
    if args.action == "verify" and args.file:
        if not args.public_key:
            raise ConfigError("--public-key", "checking an export needs the audit public key")
        try:
            key = load_public_key(args.public_key)
        except ValueError as exc:
            raise ConfigError("--public-key", str(exc)) from None
        return _report(await asyncio.to_thread(_verify_file, args.file, key, anchor_of(args.anchor)), export=True)
    assert settings is not None

    async def go(rt: Any) -> int:
        audit, now = rt.audit, rt.clock.now()
        if args.action == "public-key":
            if audit.public_key is None:
                raise ConfigError("audit.signing_key", "is not set: checkpoints are not signed")
            print(audit.public_key)
            return 0
        if args.action == "checkpoint":
            made = await audit.seal()
            signed = "signed" if made.signature else "unsigned"
            print(f"checkpoint {made.seq}: {made.heads} heads sealed, {signed}, hash {made.hash}")
            return 0
        if args.action == "verify":
            key = load_public_key(args.public_key) if args.public_key else None
            return _report(await audit.verify(when(args.since, "--since", now), key, anchor_of(args.anchor)))
        return await _export(audit, when(args.since, "--since", now), when(args.until, "--until", now), args.out)

    return await with_runtime(settings, go)


async def _export(audit: AuditService, since: float | None, until: float | None, path: str) -> int:
    try:
        out = sys.stdout if path == "-" else await asyncio.to_thread(open, path, "w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError("--out", f"cannot write {path}: {exc.strerror}") from None
    count, batch = 0, []
    try:
        async for line in audit.export(since, until):  # written as it is read, a batch at a time
            batch.append(line)
            if len(batch) >= 1000:
                await asyncio.to_thread(out.write, "".join(batch))
                count, batch = count + len(batch), []
        await asyncio.to_thread(out.write, "".join(batch))
        count += len(batch)
    finally:
        if out is not sys.stdout:
            await asyncio.to_thread(out.close)
    print(f"exported {count - 1} records to {path}", file=sys.stderr)
    return 0
