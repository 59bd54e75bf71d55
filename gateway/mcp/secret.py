"""The gate's secret: the MAC key of its run ids and idempotency keys (no MCP SDK here).

It must be something the agent cannot know, and the same across the gate's restarts, so that a
retried call finds its approval and its journaled result again. In order: `[mcp_gate] secret`
(or `HITL_MCP_GATE_SECRET`); else one generated on first start and kept in a file only its user
may read; else, when that file cannot be written, one for this process only.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MIN_SECRET = 16  # characters of a configured secret
_GENERATED = 64  # hex characters of a generated one


@dataclass(frozen=True, slots=True)
class GateSecret:
    key: bytes
    source: str  # "config", the file's path, or "process"


def state_file(env: Mapping[str, str]) -> Path | None:
    """Where a generated secret is kept: `$XDG_STATE_HOME/hitl-gateway/mcp-gate.secret`
    (default `~/.local/state/...`); None without a home."""
    base = env.get("XDG_STATE_HOME") or (str(Path(env["HOME"]) / ".local" / "state") if env.get("HOME") else "")
    return Path(base) / "hitl-gateway" / "mcp-gate.secret" if base else None


def gate_secret(configured: str, path: Path | None) -> GateSecret:
    """The gate's secret; ValueError names a configured one that is too short, or a kept file
    that is not one of ours."""
    if configured:
        if len(configured) < MIN_SECRET:
            raise ValueError(f"[mcp_gate] secret (HITL_MCP_GATE_SECRET): at least {MIN_SECRET} characters")
        return GateSecret(configured.encode("utf-8"), "config")
    if path is not None:
        with contextlib.suppress(OSError):
            return GateSecret(_kept(path), str(path))
    return GateSecret(secrets.token_bytes(32), "process")


def _kept(path: Path) -> bytes:
    """The secret in `path`, created (mode 0600) by whichever gate starts first: written in
    full to a file of its own, then linked into place, so that no gate reads half of it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(_GENERATED // 2) + "\n")
            with contextlib.suppress(FileExistsError):  # another gate was first: its secret stands
                os.link(draft, path)
        finally:
            draft.unlink()
    text = path.read_text().strip()
    if len(text) < _GENERATED:  # a file cut short, or not ours: never a weak key
        raise ValueError(f"{path}: not a gate secret ({len(text)} characters); delete it to make a new one")
    return text.encode("ascii")


__all__ = ["MIN_SECRET", "GateSecret", "gate_secret", "state_file"]
