"""The offline side of an export, shared by the audit tests: docs/audit.md's verifier script run
in an isolated interpreter, an export written to a file, and an export with one actor changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "audit.md"


def verifier_script() -> str:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## Offline verifier", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(block.splitlines()) <= 40  # the promise in the docs
    return block


def run_script(tmp_path: Path, export: Path, key: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "verify_audit.py"
    script.write_text(verifier_script(), encoding="utf-8")
    # -I: isolated (no PYTHONPATH, no user site, no cwd): only the installed `cryptography`
    return subprocess.run(
        [sys.executable, "-I", str(script), str(export), key], capture_output=True, text=True, timeout=60
    )


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "export.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def tampered(lines: list[str], kind: str = "approved") -> list[str]:
    out = []
    for line in lines:
        record = json.loads(line)
        if record["type"] == "event" and record["kind"] == kind and not any("mallory" in x for x in out):
            record["actor"] = "operator:mallory"
            line = json.dumps(record) + "\n"
        out.append(line)
    return out


def rechained(lines: list[str], approval_id: str) -> list[str]:
    """The export with one approval's event hashes recomputed over its events as they now are:
    what a tamperer without the key can do to a file."""
    from gateway.core.audit import GENESIS, event_hash

    out, prev = [], GENESIS
    for line in lines:
        record = json.loads(line)
        if record["type"] == "event" and record["approval_id"] == approval_id:
            fields = (record["kind"], record["actor"], record["at"], record["channel"], record["data"])
            record["hash"] = prev = event_hash(prev, record["seq"], approval_id, *fields)
            line = json.dumps(record) + "\n"
        out.append(line)
    return out


def appended(lines: list[str], approval_id: str, at: float) -> list[str]:
    """The export with a forged comment chained onto the end of one approval's chain (a second
    decision would also contradict the approval's row line)."""
    from gateway.core.audit import event_hash

    events = [json.loads(x) for x in lines if json.loads(x).get("approval_id") == approval_id]
    last = max(events, key=lambda e: e["id"])
    seq = last["seq"] + 1
    forged = {
        **last,
        "id": last["id"] + 10_000,
        "seq": seq,
        "kind": "comment_added",
        "actor": "operator:mallory",
        "at": at,
        "channel": None,
        "data": "{}",
    }
    forged["hash"] = event_hash(last["hash"], seq, approval_id, "comment_added", "operator:mallory", at, None, "{}")
    return [*lines[:-1], json.dumps(forged) + "\n", lines[-1]]
