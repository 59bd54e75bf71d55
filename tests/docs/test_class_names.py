"""One class per concept name: no two classes in gateway/ and adapters/ share a name.

Two `Press` classes (a channel-neutral press and a platform's parsed payload) meet in the same
adapter module, where one of them has to be imported under a prefix and a reader has to know
which is meant. A name that says which one it is needs no such knowledge.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def classes() -> dict[str, list[str]]:
    """Every class name defined in gateway/ and adapters/ (nested ones too), with where."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in ("gateway", "adapters"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef):
                    found[node.name].append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_two_classes_share_a_name() -> None:
    shared = {name: where for name, where in classes().items() if len(where) > 1}
    assert not shared, f"rename so that each name is one concept: {shared}"


def test_the_scan_sees_the_classes() -> None:
    found = classes()
    assert {"Press", "PressOutcome", "TelegramPress", "SlackPress", "AttemptOutcome"} <= found.keys()
