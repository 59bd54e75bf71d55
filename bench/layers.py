"""Layer figures of the tree (issue "one application layer"): `python -m bench.layers [ROOT]`.

Prints, for the tree at ROOT (default: this checkout), as JSON:
- `store_users`: the modules outside the application layer (gateway/service/), the store itself
  (gateway/store/) and the wiring (gateway/runtime.py) that touch a store: they import
  gateway.store, or load an attribute or a name called `store` (the `[store]` settings section,
  `settings.store` and gateway/settings/, is a section of the configuration, not a store);
- `cas_loops`: the compare-and-set retry loops written out (`for _ in range(CAS_RETRIES)`);
- `backend_lines`: the lines of gateway/store/sqlite/ and gateway/store/postgres/ (Python);
- `type_checking_in_application`: `if TYPE_CHECKING:` blocks inside gateway/service/.
Run it on an older checkout (ROOT) to compare.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

_OUTSIDE = ("gateway/store/", "gateway/service/", "gateway/settings/")


def _touches_store(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):  # `settings.store` is the [store] section, not a store
        owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        return node.attr == "store" and isinstance(node.ctx, ast.Load) and owner != "settings"
    if isinstance(node, ast.Name):
        return node.id == "store"
    return isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gateway.store")


def store_users(root: Path) -> dict[str, int]:
    hits: dict[str, int] = {}
    for path in sorted([*root.glob("gateway/**/*.py"), *root.glob("adapters/**/*.py")]):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(_OUTSIDE) or rel == "gateway/runtime.py":
            continue
        n = sum(1 for node in ast.walk(ast.parse(path.read_text())) if _touches_store(node))
        if n:
            hits[rel] = n
    return hits


def cas_loops(root: Path) -> list[str]:
    out = []
    for path in sorted(root.glob("gateway/**/*.py")):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if "in range(CAS_RETRIES)" in line:
                out.append(f"{path.relative_to(root).as_posix()}:{no}")
    return out


def backend_lines(root: Path) -> int:
    files = [*root.glob("gateway/store/sqlite/*.py"), *root.glob("gateway/store/postgres/*.py")]
    return sum(len(p.read_text().splitlines()) for p in files)


def type_checking_blocks(root: Path) -> list[str]:
    out = []
    for path in sorted(root.glob("gateway/service/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                out.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    users = store_users(root)
    figures = {
        "store_users": len(users),
        "store_users_by_module": users,
        "cas_loops": cas_loops(root),
        "backend_lines": backend_lines(root),
        "type_checking_in_application": type_checking_blocks(root),
    }
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
