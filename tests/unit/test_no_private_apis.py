"""No private API of a dependency (issue 15): our code imports no `_module` of another package,
no `_name` from one, and reaches for no `._private` attribute of a dependency's object that we
know of (aiosqlite's `_execute` and `_conn` were the last). A private API moves without notice
in a minor release; the public one is documented."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = {"gateway", "adapters", "hitl_sdk", "tests", "bench", "examples"}


def _sources() -> list[Path]:
    return [p for base in ("gateway", "adapters", "sdk/hitl_sdk", "examples") for p in (ROOT / base).rglob("*.py")]


def test_no_private_module_or_name_of_a_dependency_is_imported() -> None:
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                parts = node.module.split(".")
                if parts[0] in OURS or parts[0] == "__future__":
                    continue
                private = [p for p in parts[1:] if p.startswith("_")]
                private += [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module} {private}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] not in OURS and any(p.startswith("_") for p in parts[1:]):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
    assert found == []


def test_aiosqlite_is_gone() -> None:
    """The SQLite store runs its own connection threads (gateway/store/sqlite/engine.py)."""
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] == "aiosqlite" for n in names), path


# Underscore names of other code that are documented, each with its reason.
_ALLOWED = {
    ("os", "_exit"): "documented: exit without clean-up (a child after fork)",
    ("argparse", "_SubParsersAction"): "stdlib: the documented add_subparsers() returns it and has no public name",
}


def test_no_private_attribute_of_another_object_is_read() -> None:
    """`x._name` only on our own `self`/`cls` (request.app._client_max_size was the last)."""
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = ast.unparse(node.value)
                if owner not in ("self", "cls") and (owner, node.attr) not in _ALLOWED:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {owner}.{node.attr}")
    assert found == []
