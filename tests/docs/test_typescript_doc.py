"""docs/typescript.md shows the TypeScript examples the tests run: each marked block is, byte for
byte, a region of a file in sdk-ts/examples/ (between `// --8<-- [start:NAME]` and
`// --8<-- [end:NAME]`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.readme import DOCS, ROOT, blocks

EXAMPLES = ROOT / "sdk-ts" / "examples"
SHOWN = {
    "ts-invoice-agent": ("invoice.mjs", "agent"),
    "ts-invoice-main": ("invoice.mjs", "main"),
    "ts-common-main": ("common.mjs", "main"),
    "ts-ai-sdk-tools": ("ai-sdk.mjs", "tools"),
    "ts-ai-sdk-main": ("ai-sdk.mjs", "main"),
    "ts-openai-agents-tools": ("openai-agents.mjs", "tools"),
    "ts-openai-agents-main": ("openai-agents.mjs", "main"),
    "ts-mastra-tools": ("mastra.mjs", "tools"),
    "ts-mastra-main": ("mastra.mjs", "main"),
}


def region(path: Path, name: str) -> str:
    text = path.read_text()
    start, end = f"// --8<-- [start:{name}]\n", f"// --8<-- [end:{name}]"
    return text[text.index(start) + len(start) : text.index(end)]


def test_every_ts_block_is_marked() -> None:
    assert {n for n in blocks(DOCS / "typescript.md") if n.startswith("ts-")} == set(SHOWN)


@pytest.mark.parametrize("name", list(SHOWN))
def test_the_block_is_the_example_file(name: str) -> None:
    file, part = SHOWN[name]
    assert blocks(DOCS / "typescript.md")[name] == region(EXAMPLES / file, part), f"{name}: {file} [{part}]"


def test_the_readme_shows_the_typescript_agent_the_tests_run() -> None:
    """The landing page's TypeScript snippet, beside the Python one, is the example's agent."""
    assert blocks()["ts-invoice-agent"] == region(EXAMPLES / "invoice.mjs", "agent")
