"""An export checked with no database: by docs/audit.md's 40-line script (only `cryptography`,
run in an isolated interpreter that cannot import the gateway) and by `verify_lines`."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

from gateway.core.audit import GENESIS, event_hash, event_tail, link_hash, load_public_key
from gateway.core.audit_check import SEAL_GRACE
from gateway.runtime import Runtime
from gateway.service.audit import verify_lines
from gateway.testing import FakeClock
from tests.audit.conftest import decided
from tests.audit.offline import appended, rechained, run_script, tampered, verifier_script, write
from tests.procs import run_cli

HOUR = 3600.0


@pytest.fixture
async def export(runtime: Runtime, clock: FakeClock, tmp_path: Path) -> list[str]:
    await decided(runtime, 3, clock)
    await runtime.audit.seal()
    await decided(runtime, 1, clock, run="later")  # after the checkpoint: chained, not sealed yet
    clock.advance(HOUR)  # sealed an hour later (a slow timer): a checkpoint may be late
    await runtime.audit.seal()
    return [line async for line in runtime.audit.export()]


@pytest.mark.subprocess
async def test_clean_export_is_accepted(runtime: Runtime, export: list[str], tmp_path: Path) -> None:
    key = runtime.audit.public_key
    assert key is not None
    done = run_script(tmp_path, write(tmp_path, export), key)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr
    verdict = verify_lines(export, load_public_key(key))
    assert verdict.ok, verdict.problem
    assert "2 checkpoints" in verdict.summary and "of 4 approvals" in verdict.summary
    newest = json.loads(export[-1])  # printed to compare with a copy kept outside: a cut tail shows
    assert f"newest checkpoint 2 of 2030-01-01T13:00:08Z (--anchor 2:{newest['hash']})" in verdict.summary


@pytest.mark.subprocess
async def test_changed_event_is_refused(runtime: Runtime, export: list[str], tmp_path: Path) -> None:
    key = runtime.audit.public_key
    assert key is not None
    bad = tampered(export)
    done = run_script(tmp_path, write(tmp_path, bad), key)
    assert done.returncode == 1 and "broken: approval" in done.stderr and "seq 3" in done.stderr
    problem = verify_lines(bad, load_public_key(key)).problem
    assert problem is not None and problem.seq == 3


@pytest.mark.subprocess
async def test_dropped_approval_and_forged_signature_are_refused(
    runtime: Runtime, export: list[str], tmp_path: Path
) -> None:
    key = runtime.audit.public_key
    assert key is not None
    victim = json.loads(export[1])["approval_id"]
    without = [x for x in export if json.loads(x).get("approval_id") != victim]
    done = run_script(tmp_path, write(tmp_path, without), key)
    assert done.returncode == 1 and f"approval {victim}" in done.stderr
    assert not verify_lines(without, load_public_key(key)).ok
    other = "11" * 32  # a key that did not sign these checkpoints
    done = run_script(tmp_path, write(tmp_path, export), load_public_key_hex(other))
    assert done.returncode == 1 and "bad signature" in done.stderr


@pytest.mark.subprocess
async def test_stripped_checkpoints_and_rewritten_chain_are_refused(
    runtime: Runtime, export: list[str], tmp_path: Path
) -> None:
    """The review's attack on a file: change the approver, recompute the chain, drop every
    checkpoint line (nothing left to check a signature of)."""
    key = runtime.audit.public_key
    assert key is not None
    victim = next(json.loads(x)["approval_id"] for x in tampered(export) if "mallory" in x)
    bad = [x for x in rechained(tampered(export), victim) if json.loads(x)["type"] != "checkpoint"]
    done = run_script(tmp_path, write(tmp_path, bad), key)
    assert done.returncode == 1 and "not sealed" in done.stderr, done.stderr
    verdict = verify_lines(bad, load_public_key(key))  # nothing to check it against: not proven
    assert verdict.unsealed == 24 and "0 checkpoints" in verdict.summary, verdict
    code, out = await run_cli(
        tmp_path / "none.toml", "audit", "verify", "--file", str(write(tmp_path, bad)), "--public-key", key
    )
    assert code == 3 and "audit trail unbroken, not proven" in out, out


@pytest.mark.subprocess
async def test_event_appended_after_a_sealed_head_is_refused(
    runtime: Runtime, export: list[str], tmp_path: Path
) -> None:
    """A forged decision chained onto a sealed approval, dated before the newest checkpoint:
    that checkpoint would have sealed it."""
    key = runtime.audit.public_key
    assert key is not None
    first = json.loads(export[1])
    bad = appended(export, first["approval_id"], first["at"] + 0.5)
    done = run_script(tmp_path, write(tmp_path, bad), key)
    assert done.returncode == 1 and "not sealed" in done.stderr, done.stderr
    problem = verify_lines(bad, load_public_key(key)).problem
    assert problem is not None and problem.approval_id == first["approval_id"]
    assert problem.found.startswith("not sealed")


@pytest.mark.subprocess
async def test_an_event_newer_than_every_checkpoint_is_reported_not_refused(
    runtime: Runtime, export: list[str], tmp_path: Path
) -> None:
    key = runtime.audit.public_key
    assert key is not None
    last = max(json.loads(x)["at"] for x in export if json.loads(x)["type"] == "checkpoint")
    newer = appended(export, json.loads(export[1])["approval_id"], last + 1)
    done = run_script(tmp_path, write(tmp_path, newer), key)
    assert (done.returncode, done.stdout.strip()) == (3, "unbroken, not proven: 1 events sealed by no checkpoint")
    verdict = verify_lines(newer, load_public_key(key))
    assert verdict.ok and "1 events not sealed yet" in verdict.summary, verdict


@pytest.mark.subprocess
async def test_a_rewrite_the_newest_checkpoint_sealed_is_not_proven_without_it(
    runtime: Runtime, export: list[str], tmp_path: Path
) -> None:
    """The fourth review's #3: a whole export minus its newest checkpoint, the approval only it
    sealed rewritten (another approver) and re-dated after the newest one kept. Neither verifier
    can break it, and neither may call it proven: exit 3 from both, never a bare 'ok'."""
    key = runtime.audit.public_key
    assert key is not None
    checkpoints = [json.loads(x) for x in export if json.loads(x)["type"] == "checkpoint"]
    [victim] = {lf[0] for lf in checkpoints[-1]["leaves"]} - {lf[0] for c in checkpoints[:-1] for lf in c["leaves"]}
    out = []
    for line in export:
        record = json.loads(line)
        if record["type"] == "checkpoint" and record["seq"] == checkpoints[-1]["seq"]:
            continue
        if record["type"] == "event" and record["approval_id"] == victim:
            record["at"] = checkpoints[-2]["at"] + record["at"] % 100
            record["actor"] = "operator:mallory" if record["kind"] == "approved" else record["actor"]
        out.append(json.dumps(record) + "\n")
    forged = rechained(out, victim)
    done = run_script(tmp_path, write(tmp_path, forged), key)
    assert done.returncode == 3 and done.stdout.startswith("unbroken, not proven: "), (done.stdout, done.stderr)
    verdict = verify_lines(forged, load_public_key(key))
    assert verdict.ok and verdict.unsealed > 0, verdict.summary


def load_public_key_hex(seed: str) -> str:
    from gateway.core.audit import load_private_key, public_key_hex

    return public_key_hex(load_private_key(seed))


@pytest.mark.parametrize(
    "fields",
    [
        ("a1b2c3", "suspended", None, 1796163119.70765, None, '{"args_hash":"ab","run_id":"r1"}'),
        ("a1b2c3", "vote", 'web:al"ice\\', 1e-7, "web", '{"note":"\\u00e9t\\u00e9 \\"quoted\\"","n":[1,2.5]}'),
        ("x", "approved", "telegram:42", 0.1 + 0.2, "telegram", "{}"),
        ("é", "card_posted", "ünïcode", -1.5, "slack", '{"ref":"C1/1.2"}'),
        ("a\nb", "vote", "tab\there\x00\x1f\x7f", 1e300, "line\u2028sep", '{"k":"\\n"}\n\r\x08\x0c'),
        ("a", "vote", None, 1796163119, None, "null"),
    ],
)
def test_the_writers_link_is_the_verifiers_hash(fields: tuple[Any, ...]) -> None:
    """The store encodes an event's tail on the caller's thread and the writer only links it:
    the text must be the verifier's compact JSON list byte for byte."""
    approval_id, kind, actor, at, channel, data = fields
    for prev, seq in ((GENESIS, 1), (hashlib.sha256(b"x").hexdigest(), 17)):
        body = json.dumps([prev, seq, approval_id, kind, actor, at, channel], separators=(",", ":"), ensure_ascii=False)
        want = hashlib.sha256((body + data).encode("utf-8")).hexdigest()
        assert link_hash(prev, seq, event_tail(approval_id, kind, actor, at, channel, data)) == want
        assert event_hash(prev, seq, approval_id, kind, actor, at, channel, data) == want


@pytest.mark.parametrize("at", [math.inf, -math.inf, math.nan])
def test_an_event_time_that_json_refuses_is_refused(at: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        event_tail("a", "vote", None, at, None, "{}")


def test_the_script_allows_the_checkers_grace() -> None:
    assert f"{{}}, None, {int(SEAL_GRACE)}  # found" in verifier_script()


def _forged_since(lines: list[str]) -> list[str]:
    """Everything exempt as 'before the range': since far in the future, no checkpoint left."""
    victim = next(json.loads(x)["approval_id"] for x in tampered(lines) if "mallory" in x)
    out = [x for x in rechained(tampered(lines), victim) if json.loads(x)["type"] != "checkpoint"]
    header = json.loads(out[0])
    return [json.dumps({**header, "since": 2.5e11}) + "\n", *out[1:]]  # the year 9892


def _without_first_checkpoint(lines: list[str]) -> list[str]:
    """A whole export (no since) minus checkpoint 1 and every approval it sealed."""
    first = next(json.loads(x) for x in lines if json.loads(x)["type"] == "checkpoint")
    gone = {lf[0] for lf in first["leaves"]}

    def kept(record: dict[str, Any]) -> bool:
        if record["type"] == "checkpoint":
            return bool(record["seq"] != first["seq"])
        return record.get("approval_id") not in gone

    return [x for x in lines if kept(json.loads(x))]


def _dated_before_every_floor(lines: list[str]) -> list[str]:
    return appended(lines, json.loads(lines[1])["approval_id"], -1e19)


def _two_headers(lines: list[str]) -> list[str]:
    return [lines[0], json.dumps({**json.loads(lines[0]), "since": 1e12}) + "\n", *lines[1:]]


def _since_after_every_event(lines: list[str]) -> list[str]:
    """The third review's H: `since` in the year 9999 exempts nothing that follows a sealed head."""
    first = json.loads(lines[1])
    forged = appended(lines, first["approval_id"], first["at"] + 0.5)
    return [json.dumps({**json.loads(forged[0]), "since": 253402300799}) + "\n", *forged[1:]]


def _appended_before_since(lines: list[str]) -> list[str]:
    """The third review's I: a decision chained after the chain's events in the range, dated
    before the range: not the part of the chain sealed before it."""
    events = [json.loads(x) for x in lines if json.loads(x)["type"] == "event"]
    last = max(events, key=lambda e: e["at"])
    forged = appended(lines, last["approval_id"], last["at"] - 7200)
    return [json.dumps({**json.loads(forged[0]), "since": last["at"] - 3600}) + "\n", *forged[1:]]


@pytest.mark.parametrize(
    "forge",
    [
        _forged_since,
        _without_first_checkpoint,
        _dated_before_every_floor,
        _two_headers,
        _since_after_every_event,
        _appended_before_since,
    ],
)
@pytest.mark.subprocess
async def test_the_second_reviews_forged_exports_are_refused(
    runtime: Runtime, export: list[str], tmp_path: Path, forge: Any
) -> None:
    key = runtime.audit.public_key
    assert key is not None
    bad = forge(export)
    done = run_script(tmp_path, write(tmp_path, bad), key)
    assert done.returncode == 1 and "broken: " in done.stderr, (done.stdout, done.stderr)
    verdict = verify_lines(bad, load_public_key(key))
    assert not verdict.ok, verdict.summary


@pytest.mark.subprocess
@pytest.mark.parametrize("since", ["yesterday", [0]])
async def test_a_since_that_is_no_number_is_refused_by_both(
    runtime: Runtime, export: list[str], tmp_path: Path, since: Any
) -> None:
    """The script has no message for it (a Python error, exit 1, as docs/audit.md says); the
    checker names the field. Neither accepts the file."""
    key = runtime.audit.public_key
    assert key is not None
    bad = [json.dumps({**json.loads(export[0]), "since": since}) + "\n", *export[1:]]
    done = run_script(tmp_path, write(tmp_path, bad), key)
    assert done.returncode == 1 and "ok" not in done.stdout, (done.stdout, done.stderr)
    verdict = verify_lines(bad, load_public_key(key))
    assert not verdict.ok and "since must be epoch seconds" in str(verdict.problem), verdict.problem


def _first(lines: list[str], kind: str, **changes: Any) -> list[str]:
    """The export with the first record of `kind` changed."""
    at = next(i for i, x in enumerate(lines) if json.loads(x)["type"] == kind)
    return [*lines[:at], json.dumps({**json.loads(lines[at]), **changes}) + "\n", *lines[at + 1 :]]


@pytest.mark.parametrize(
    ("kind", "changes", "named"),
    [
        ("event", {"seq": math.inf}, "infinity"),
        ("event", {"id": math.inf}, "infinity"),
        ("event", {"actor": math.nan}, "event actor must be a string or null"),
        ("checkpoint", {"at": math.nan}, "checkpoint at must be epoch seconds"),
        ("checkpoint", {"at": math.inf}, "checkpoint at must be epoch seconds"),
        ("checkpoint", {"signature": 5}, "checkpoint signature must be a string or null"),
        ("checkpoint", {"seq": math.inf}, "infinity"),
    ],
)
@pytest.mark.subprocess
async def test_a_malformed_line_is_named_not_a_traceback(
    runtime: Runtime, export: list[str], kind: str, changes: dict[str, Any], named: str
) -> None:
    """The fourth review's #4: values no gateway writes (infinite ids, NaN fields, a signature
    that is no text) give a verdict that names the line, not an OverflowError or TypeError."""
    key = runtime.audit.public_key
    assert key is not None
    verdict = verify_lines(_first(export, kind, **changes), load_public_key(key))
    assert not verdict.ok and named in str(verdict.problem), verdict.problem


@pytest.mark.subprocess
async def test_a_file_too_deep_or_not_utf8_or_missing_is_named(
    runtime: Runtime, export: list[str], tmp_path: Path
) -> None:
    """`audit verify --file`: JSON nested past the parser's recursion limit, bytes that are no
    UTF-8, a path that is not there: a line that names it, exit 1 (or 2 for the path)."""
    key = runtime.audit.public_key
    assert key is not None
    deep = '{"type":"event","data":' + "[" * 100_000 + "]" * 100_000 + "}\n"
    verdict = verify_lines([export[0], deep], load_public_key(key))
    assert not verdict.ok and "line 2: maximum recursion depth" in str(verdict.problem), verdict.problem
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes("".join(export[:3]).encode() + b'{"type": "\xff"}\n')
    code, out = await run_cli(tmp_path / "none.toml", "audit", "verify", "--file", str(binary), "--public-key", key)
    assert code == 1 and "line 4: not UTF-8" in out, out
    missing = str(tmp_path / "missing.jsonl")
    code, out = await run_cli(tmp_path / "none.toml", "audit", "verify", "--file", missing, "--public-key", key)
    assert code == 2 and "--file: cannot read" in out and "Traceback" not in out, out
