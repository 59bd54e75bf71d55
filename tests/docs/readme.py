"""The README's own code blocks (and those of a docs/ page), extracted for the tests that run them.

A block that a test runs is marked by the line `<!-- readme-test: NAME -->` right above its
fence (an HTML comment: GitHub does not show it). `block(NAME)` returns the README's code as
written; `block(NAME, path)` and `blocks(path)` read another Markdown file the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_BLOCK = re.compile(r"<!-- readme-test: ([\w-]+) -->\n```[\w-]*\n(.*?)```\n", re.S)


def blocks(path: Path = README) -> dict[str, str]:
    """Every marked block of the Markdown file `path` (the README by default), by name."""
    found: dict[str, str] = {}
    for name, code in _BLOCK.findall(path.read_text()):
        assert name not in found, f"two blocks of {path.name} are named {name!r}"
        found[name] = code
    return found


def block(name: str, path: Path = README) -> str:
    return blocks(path)[name]


def region(path: Path, name: str) -> str:
    """The text between `# --8<-- [start:NAME]` and `# --8<-- [end:NAME]` lines of a file."""
    text = path.read_text()
    start, end = f"# --8<-- [start:{name}]\n", f"# --8<-- [end:{name}]"
    return text[text.index(start) + len(start) : text.index(end)]


def at_port(code: str, port: int) -> str:
    """The block with its one address variable pointed at `port`: the README names the port once
    (`GW=http://127.0.0.1:8080`), so a block that hard-codes it elsewhere fails here."""
    line = "GW=http://127.0.0.1:8080\n"
    assert code.count("8080") == code.count(line), f"the block names port 8080 outside {line!r}"
    return code.replace(line, f"GW=http://127.0.0.1:{port}\n")
