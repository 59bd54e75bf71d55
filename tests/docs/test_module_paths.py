"""Every module and file a docstring, a comment, the README or docs/ names exists.

A reader follows `gateway.core.tokens.TokenSigner` or `gateway/store/sql/queries.sql` to the
code; a name left behind by a move sends them nowhere. The rule:
- a dotted path that starts `gateway.`, `adapters.` or `hitl_sdk.` is the longest importable
  module in it, then attributes of that module (`gateway.core.rounds.tag_of`, or a method:
  `gateway.core.tokens.TokenSigner.mac`);
- a file path that starts with a top folder of the repository (`gateway/`, `tests/`, `docs/`,
  ...) is a file or folder of the checkout, as written (no globs), and so is a bare `NAME.md`
  (and `DESIGN`, a name for DESIGN.md), unless .gitignore lists it: a file a command writes
  (`bench/results.json`).
Python files are read in their docstrings and comments only: a string in code (a logger's name,
`gateway.db`) is not a reference.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
_DOTTED = re.compile(r"(?<![\w./:-])((?:gateway|adapters|hitl_sdk)(?:\.[A-Za-z_]\w*)+)")
_TOPS = ("gateway", "adapters", "sdk", "tests", "docs", "bench", "examples", "deploy")
_FILE = re.compile(rf"(?<![\w./-])((?:{'|'.join(_TOPS)})/[\w./-]*[\w/]|[A-Z][\w-]*\.md\b|\bDESIGN\b)")
# A dotted name that ends in one of these is a file name (`hitl-gateway.db`), not a module.
_FILE_SUFFIXES = {"db", "toml", "py", "md", "log", "json", "sqlite", "service", "txt"}


def python_text(path: Path) -> str:
    """The docstrings and comments of a Python file, one per line."""
    source = path.read_text()
    parts = [
        tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    return "\n".join(parts)


# what a build writes into the tree (`pip install ./sdk` leaves sdk/build/lib, a stale copy):
# not the source, and present or not by the order the suite ran in
_BUILT = frozenset({"build", "dist", "__pycache__"})


def texts() -> Iterator[tuple[str, str]]:
    """(where, text) for every document and every Python module this test reads."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield str(path.relative_to(ROOT)), path.read_text()
    for top in ("gateway", "adapters", "sdk"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if _BUILT.isdisjoint(path.relative_to(ROOT).parts):
                yield str(path.relative_to(ROOT)), python_text(path)


def _module(dotted: str) -> tuple[ModuleType, list[str]] | None:
    """The longest importable module that `dotted` starts with, and the names after it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:cut])), parts[cut:]
        except ImportError:
            continue
    return None


def module_path_exists(dotted: str) -> bool:
    found = _module(dotted)
    if found is None:
        return False
    obj: object = found[0]
    for name in found[1]:
        if not hasattr(obj, name):
            return False
        obj = getattr(obj, name)
    return True


def _written(path: str) -> bool:
    """.gitignore lists it: an output of a command (`make bench`), not part of the checkout."""
    patterns = [line for line in (ROOT / ".gitignore").read_text().splitlines() if "/" in line.strip("/")]
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def file_path_exists(path: str) -> bool:
    if path == "DESIGN":
        path = "DESIGN.md"
    if _written(path):
        return True
    if "/" not in path:
        return any(ROOT.glob(f"**/{path}")) if not path.isupper() else (ROOT / path).exists()
    return (ROOT / path).exists()


def stale() -> list[str]:
    missing: list[str] = []
    for where, text in texts():
        for dotted in sorted(set(_DOTTED.findall(text))):
            if dotted.rsplit(".", 1)[-1] not in _FILE_SUFFIXES and not module_path_exists(dotted):
                missing.append(f"{where}: {dotted}")
        for path in sorted(set(_FILE.findall(text))):
            if not file_path_exists(path.rstrip("/.")):
                missing.append(f"{where}: {path}")
    return missing


def test_every_named_module_and_file_exists() -> None:
    missing = stale()
    assert not missing, "names of modules or files that do not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("name", "exists"),
    [
        ("gateway.core.rounds.tag_of", True),
        ("gateway.core.tokens.TokenSigner.mac", True),
        ("gateway.channels", False),
        ("gateway.core.rounds.tagged", False),
        ("adapters.telegram", True),
    ],
)
def test_the_rule(name: str, exists: bool) -> None:
    assert module_path_exists(name) is exists


def test_the_scanner_reads_docstrings_and_comments_only(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        '"""See gateway.pool."""\nimport logging\n\nlog = logging.getLogger("gateway.nowhere")  # gateway.x\n'
    )
    assert _DOTTED.findall(python_text(path)) == ["gateway.x", "gateway.pool"]


def test_generated_files_and_design_are_judged_by_the_rule() -> None:
    assert file_path_exists("bench/results.json") and file_path_exists("docs/audit.md")
    assert not file_path_exists("DESIGN") and not file_path_exists("gateway/housekeeping.py")
