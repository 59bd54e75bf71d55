"""Every example in docs/integrations.md is the code the framework tests run: the marked region
(`# [docs:NAME]` ... `# [/docs:NAME]`) of the example file, character for character."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations.md"
_EXAMPLE = re.compile(r"<!-- example: (\S+)#(\S+) -->\n```python\n(.*?)\n```", re.S)


def region(path: Path, name: str) -> str:
    lines = path.read_text().splitlines()
    start, end = lines.index(f"# [docs:{name}]"), lines.index(f"# [/docs:{name}]")
    return "\n".join(lines[start + 1 : end]).strip("\n")


def test_each_doc_example_is_its_example_files_region() -> None:
    found = _EXAMPLE.findall(DOC.read_text())
    assert sorted(name for _, name, _ in found) == ["claude-agent-sdk", "langgraph", "openai-agents", "pydantic-ai"]
    for path, name, code in found:
        assert code == region(ROOT / path, name), f"docs/integrations.md differs from {path}#{name}"
