"""The seams that make channels plugins: adapters reach no store, the core names no channel kind,
and every event kind is named once."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

from gateway.core.events import EventKind
from gateway.delivery.registry import installed
from gateway.delivery.spec import ChannelContext

ROOT = Path(__file__).resolve().parents[2]
# The one place in gateway/ whose words look like a channel kind and are not one: redaction's
# category of personal data "e-mail address" (its `[redacted:email]` marker is user-visible).
# `email` there is a kind of data (an address to redact, the OpenID claim), not the channel
NOT_A_CHANNEL = {"gateway/core/redact.py", "gateway/settings/oidc.py", "gateway/http/web/oidc.py"}
_STDLIB_EMAIL = re.compile(r"\s*(from email\.\w+ import|import email\.)")  # the standard library's module
_FORBIDDEN_MODULES = ("gateway.store", "gateway.runtime", "gateway.service.approvals", "gateway.http.app")


def _sources(base: str, *suffixes: str) -> list[Path]:
    return sorted(p for p in (ROOT / base).rglob("*") if p.suffix in suffixes and "__pycache__" not in p.parts)


def test_no_adapter_module_reaches_the_store() -> None:
    """Adapters see a ChannelContext: no store, no runtime, no Service; they never name one."""
    offences = []
    for path in _sources("adapters", ".py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(_FORBIDDEN_MODULES):
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}")
            elif isinstance(node, ast.Import):
                offences += [
                    f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name.startswith(_FORBIDDEN_MODULES)
                ]
            elif isinstance(node, ast.Attribute) and node.attr in ("store", "_store", "runtime", "rt", "_svc"):
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno} uses .{node.attr}")
    assert offences == []
    assert {f.name for f in fields(ChannelContext)} == {
        "kind",
        "settings",
        "public_url",
        "signer",
        "clock",
        "inbound",
        "http",
        "approvers",
    }


def test_no_core_code_names_a_channel_kind() -> None:
    """Outside the built-in web channel, gateway/ knows channels only through their specs."""
    kinds = sorted(installed())
    assert {"email", "slack", "telegram"} <= set(kinds)
    words = "|".join(re.escape(k).replace("email", "e-?mails?") for k in kinds)
    pattern = re.compile(rf"\b({words})\b", re.IGNORECASE)
    found = []
    for path in _sources("gateway", ".py", ".html", ".sql", ".css", ".toml"):
        rel = str(path.relative_to(ROOT))
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and rel not in NOT_A_CHANNEL and not _STDLIB_EMAIL.match(line):
                found.append(f"{rel}:{no}: {line.strip()}")
    assert found == []


def test_every_event_kind_is_named_in_one_enum() -> None:
    """No module spells an event kind that EventKind does not name, and no adapter reads events."""
    values = {k.value for k in EventKind}
    assert len(values) == len(EventKind)
    for path in _sources("adapters", ".py"):
        text = path.read_text()
        assert ".kind ==" not in text and "list_events" not in text, path
    gateway_events = re.compile(r"NewEvent\([^,]+,\s*\"([a-z_]+)\"")
    for path in _sources("gateway", ".py"):
        assert gateway_events.findall(path.read_text()) == [], path
