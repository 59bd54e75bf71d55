"""A bad rule stops a real `serve` and `check-config` with one line naming it (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.procs import run_cli

pytestmark = pytest.mark.subprocess

CONFIG = """
[server]
port = 0

[store]
url = "sqlite:///{db}"

[security]
secret_keys = ["a-secret-0123456789abcdef"]

[[rule]]
name = "small-charges"
when = 'step == "charge" && args.amount <'
then = "allow"
"""


@pytest.mark.parametrize("command", ["serve", "check-config"])
async def test_a_bad_condition_stops_the_start(tmp_path: Path, command: str) -> None:
    config = tmp_path / "hitl.toml"
    config.write_text(CONFIG.format(db=tmp_path / "gw.db"))
    code, out = await run_cli(config, command)
    assert code == 2
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hitl-gateway: config: rule.small-charges.when: Syntax error")
    assert not (tmp_path / "gw.db").exists()  # stopped before anything was opened
