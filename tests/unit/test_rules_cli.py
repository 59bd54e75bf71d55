"""`hitl-gateway rules check|test FILE`, in-process through the real command parser."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gateway.cli.main import main

CONFIG = """
[security]
secret_keys = ["a-secret-0123456789abcdef"]

[security.agents]
billing = "agent-key-billing-0123456789"

[[rule]]
name = "try-small"
when = 'step == "charge" && args.amount < 100'
then = "allow"
mode = "shadow"

[[rule]]
name = "small-charges"
when = 'step == "charge" && args.currency == "EUR" && args.amount < 5000'
then = "allow"
reason = "under 50 EUR"

[[rule]]
name = "large-charges"
when = 'step == "charge" && args.amount >= 1000000'
then = "ask"
channels = ["web"]
agents = ["billing"]
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [n for n in os.environ if n.startswith("HITL_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "hitl.toml"
    path.write_text(CONFIG)
    return path


def body(tmp_path: Path, **fields: object) -> str:
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"agent": "billing", "run_id": "r1", "step": "charge", **fields}))
    return str(path)


def test_check_lists_the_rules(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "rules", "check"]) == 0
    out = capsys.readouterr().out
    assert "1. try-small: allow (shadow)" in out and "3. large-charges: ask agents=billing" in out
    assert "ok: 3 rule(s) compiled" in out and "rules_hash " in out


def test_check_stops_on_a_bad_condition(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config.write_text(CONFIG.replace("args.currency ==", "arg.currency =="))
    assert main(["--config", str(config), "rules", "check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hitl-gateway: config: rule.small-charges.when:") and "\n" not in err
    assert "undeclared reference to 'arg.currency'" in err


def test_test_prints_outcome_rule_reason_and_shadow(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(config), "rules", "test", body(tmp_path, args={"amount": 42, "currency": "EUR"})]) == 0
    out = capsys.readouterr().out
    assert "outcome: allow\nrule: small-charges\nreason: under 50 EUR\n" in out
    assert "shadow: try-small would allow" in out


def test_test_json_and_the_default(config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = body(tmp_path, args={"amount": 2_000_000, "currency": "USD"})
    assert main(["--config", str(config), "rules", "test", "--json", file]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["outcome"], result["rule"], result["channels"]) == ("ask", "large-charges", ["web"])
    other = body(tmp_path, agent="payroll", args={"amount": 2_000_000, "currency": "USD"})
    assert main(["--config", str(config), "rules", "test", "--json", other]) == 0
    assert json.loads(capsys.readouterr().out)["rule"] is None  # large-charges is billing's only


def test_test_rejects_a_bad_body_naming_the_field(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nobody.json"
    path.write_text(json.dumps({"step": "charge"}))
    assert main(["--config", str(config), "rules", "test", str(path)]) == 2
    assert "agent" in capsys.readouterr().err
    assert main(["--config", str(config), "rules", "test", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
