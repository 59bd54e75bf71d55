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


async def test_a_good_rule_set_does_not_serve_while_suspend_ignores_it(tmp_path: Path) -> None:
    """Until rules are a step of the suspend, a `deny` in the config must not look enforced: the
    serve refuses with one line, and `check-config` (which does not serve) accepts the rules."""
    config = tmp_path / "hitl.toml"
    config.write_text(CONFIG.format(db=tmp_path / "gw.db").replace("args.amount <'", "args.amount < 5000'"))
    code, out = await run_cli(config, "serve")
    assert code == 2, out
    assert out.strip().splitlines() == [
        "hitl-gateway: config: rule: this version checks rules (`hitl-gateway rules check`, `rules test FILE`)"
        " but does not apply them at suspend yet; remove [rules] and [[rule]] to serve"
    ]
    assert not (tmp_path / "gw.db").exists()
    code, out = await run_cli(config, "check-config")
    assert code == 0, out
