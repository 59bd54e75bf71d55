"""Structure figures of the tree (issue "one SQL, one layout"): `python -m bench.structure [ROOT]`.

Prints, for the tree at ROOT (default: this checkout):
- SQL statements of one backend with a near twin in the other (normalised text, ratio >= 0.8),
  for the queries and the migrations apart; a statement counts where it is written: a .sql
  file or Python string under gateway/store/ is SQLite's if its path (or, in the old tree, its
  Python name) says sqlite, PostgreSQL's if it says postgres or pg, else shared by both;
- the lines of the largest module under gateway/ and adapters/;
- the number of top-level modules in gateway/;
- import cycles at import time (module-level imports only: not under `if TYPE_CHECKING:`,
  not inside a function), as strongly connected components of more than one module.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys
from pathlib import Path

_SQL_START = re.compile(r"^\s*(WITH|SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER)\b", re.I)
_WORD = re.compile(r"\s+")
_NAMED = re.compile(r"^--\s*name:\s*\w+\s*$", re.M)
_BACKENDS = ("sqlite", "postgres", "shared")


def _statements(script: str) -> list[str]:
    """The statements of a script: split at `;` ending a line, outside `$$ ... $$` bodies."""
    out, buf, quoted = [], [], False
    for line in script.splitlines():
        quoted ^= line.count("$$") % 2 == 1
        buf.append(line)
        if not quoted and line.rstrip().endswith(";"):
            out.append("\n".join(buf))
            buf = []
    out.append("\n".join(buf))
    return [s for s in (_strip_comments(b) for b in out) if _SQL_START.match(s)]


def _strip_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--")).strip()


def _py_strings(path: Path) -> list[tuple[str, str]]:
    """(assigned name or "", SQL) for each SQL string constant or f-string of a Python module,
    each once (an assigned one under its name)."""
    tree = ast.parse(path.read_text())
    named: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            named[id(node.value)] = node.targets[0].id
    out: list[tuple[str, str]] = []
    inside: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            inside.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)  # type: ignore[misc]
        else:
            continue
        if len(text) > 20 and (_SQL_START.match(text) or _SQL_START.match(_strip_comments(text))):
            out.append((named.get(id(node), ""), text))
    return out


def _backend(rel: str, name: str = "") -> str:
    """sqlite, postgres or shared, from a path under gateway/store/ (and a Python name)."""
    rel, name = rel.lower(), name.lower()
    if "sqlite" in rel or name.endswith("_sqlite"):
        return "sqlite"
    if "postgres" in rel or rel.startswith("pg") or "/pg" in rel or name.endswith("_postgres"):
        return "postgres"
    return "shared"


def _store_statements(store: Path) -> dict[str, dict[str, list[str]]]:
    """{"queries"|"migrations": {backend: [statement]}}: every SQL statement under gateway/store/,
    written in a .sql file or as a Python string, by where it is written."""
    out: dict[str, dict[str, list[str]]] = {k: {b: [] for b in _BACKENDS} for k in ("queries", "migrations")}
    for p in sorted(store.rglob("*")):
        if p.suffix not in (".py", ".sql") or "__pycache__" in p.parts:
            continue
        rel = str(p.relative_to(store))
        kind = "migrations" if "migration" in rel else "queries"
        if p.suffix == ".sql":
            text = p.read_text()
            parts = _NAMED.split(text)[1:] if _NAMED.search(text) else [text]
            for part in parts:
                out[kind][_backend(rel)].extend(_statements(part) if kind == "migrations" else _statements(part)[:1])
            continue
        for name, sql in _py_strings(p):
            statements = _statements(sql) if kind == "migrations" else [sql]
            out[kind][_backend(rel, name)].extend(statements)
    return out


def _norm(sql: str) -> str:
    sql = re.sub(r"[$?]\d+|\?", "?", sql)
    sql = re.sub(r"--[^\n]*", " ", sql)
    return _WORD.sub(" ", sql).strip().lower()


def _twins(lite: list[str], pg: list[str]) -> int:
    """SQLite statements with a near twin (normalised text, ratio >= 0.8) among PostgreSQL's."""
    a, b = [_norm(s) for s in lite], [_norm(s) for s in pg]
    return sum(any(difflib.SequenceMatcher(None, s, t, autojunk=False).ratio() >= 0.8 for t in b) for s in a)


def sql_twins(root: Path) -> dict[str, dict[str, int]]:
    """Per kind (queries, migrations): statements written for SQLite only, for PostgreSQL only,
    once for both, and how many SQLite-only ones have a near twin in PostgreSQL's: the same
    statement written twice."""
    report = {}
    for kind, by in _store_statements(root / "gateway" / "store").items():
        report[kind] = {
            "sqlite_only": len(by["sqlite"]),
            "postgres_only": len(by["postgres"]),
            "shared": len(by["shared"]),
            "sqlite_with_pg_twin": _twins(by["sqlite"], by["postgres"]),
        }
    return report


def largest_module(root: Path) -> tuple[str, int]:
    best = ("", 0)
    for base in ("gateway", "adapters"):
        for p in (root / base).rglob("*.py"):
            n = len(p.read_text().splitlines())
            if n > best[1]:
                best = (str(p.relative_to(root)), n)
    return best


def top_level_modules(root: Path) -> int:
    return sum(1 for p in (root / "gateway").glob("*.py"))


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_time_imports(tree: ast.Module, module: str, is_pkg: bool, deferred: bool = False) -> set[str]:
    """Imports run when the module is imported; with `deferred`, also those inside functions
    (run later, at a call) and under `if TYPE_CHECKING:` (run by the type checker only)."""
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not deferred:
                visit(node.orelse)
                continue
            if deferred and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(node.body)
                continue
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = module.split(".") if is_pkg else module.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join([*pkg, base] if base else pkg)
                out.add(base)
                out.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, field, []):
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(tree.body)
    return out


def import_cycles(root: Path, deferred: bool = False) -> list[list[str]]:
    files = {
        _module_name(root, p): p
        for base in ("gateway", "adapters")
        for p in (root / base).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        imported = _import_time_imports(ast.parse(path.read_text()), name, path.name == "__init__.py", deferred)
        edges = {m for m in imported if m in files and m != name}
        # importing a submodule runs its packages' __init__ first
        for m in list(edges):
            parts = m.split(".")
            edges.update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in files)
        edges.discard(name)
        graph[name] = {e for e in edges if not name.startswith(e + ".")}
    return _sccs(graph)


def _sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    name, lines = largest_module(root)
    cycles = import_cycles(root)
    deferred = import_cycles(root, deferred=True)
    report = {
        "sql": sql_twins(root),
        "largest_module": {"path": name, "lines": lines},
        "top_level_modules_in_gateway": top_level_modules(root),
        "import_time_cycles": len(cycles),
        "cycles": cycles,
        "cycles_with_deferred_and_type_imports": len(deferred),
        "deferred_cycles": deferred,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
