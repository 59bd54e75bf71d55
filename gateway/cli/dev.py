"""`--dev`: a secret, an agent key and an operator key kept under ./var, for a local trial."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

DEV_SECRETS = Path("var/dev-secrets.json")


def _write_secrets(path: Path, data: dict[str, str]) -> None:
    """Write the dev secrets readable by the owner only (a new file, renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def dev_defaults(path: Path = DEV_SECRETS) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """A dev secret, agent key and operator key kept under ./var; returns (defaults, the keys
    that are new, to print once). A file from before operators existed gets an operator key."""
    data: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    new: dict[str, str] = {}
    if "secret_key" not in data:
        data["secret_key"] = secrets.token_urlsafe(32)
    for name in ("api_key", "operator_key"):
        if name not in data:
            data[name] = new[name] = f"dev_{'op_' if name == 'operator_key' else ''}" + secrets.token_urlsafe(24)
    if new:
        _write_secrets(path, data)
    # Dev only: deciding by holding the resume token is on, for the README walk-through.
    security = {
        "secret_keys": [data["secret_key"]],
        "agents": {"dev": data["api_key"]},
        "operators": {"dev": data["operator_key"]},
        "token_decisions": True,
    }
    return {"security": security, "web": {"approvers": ["dev"]}}, new
