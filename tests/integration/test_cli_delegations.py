"""`hitl-gateway delegations list|show|add|revoke` on a SQLite file (as operator:cli), and the
same checks, messages and exit codes as `POST/GET/DELETE /v1/delegations` define them; a refusal
names the option (`--to`), exits 2 and creates nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.cli.delegations import _when
from gateway.cli.main import main
from gateway.cli.present import delegation_rows
from gateway.core.errors import ValidationError
from gateway.testing import TEST_SECRET

NOW = datetime(2031, 7, 1, 9, 30, 15, 123456, tzinfo=UTC)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "gw.toml"
    path.write_text(f'[store]\nurl = "sqlite:///{tmp_path / "gw.db"}"\n[security]\nsecret_keys = ["{TEST_SECRET}"]\n')
    return path


def _run(config: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--config", str(config), "delegations", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _refusal(err: str) -> str:
    """The one line a refusal prints (the store's INFO log lines aside)."""
    lines = [line for line in err.splitlines() if line.startswith("hitl-gateway: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_delegations_add_list_show_revoke_on_the_store(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(config, capsys, "add", "--from", "web:Alice", "--to", "web:bob", "--until", "14d")
    assert code == 0, err
    made_id, *rest = out.split()
    assert rest[:4] == ["web:bob", "decides", "for", "web:alice"]  # canonical, as the API stores it
    code, out, _ = _run(
        config, capsys, "add", "--from", "web:carol", "--to", "slack:U012AB3CD", "--start", "1d", "--until", "3d"
    )
    later_id = out.split()[0]
    code, out, _ = _run(config, capsys, "add", "--from", "web:dan", "--to", "web:erin", "--until", "8h", "--json")
    made = json.loads(out)
    assert (made["delegator"], made["delegate"], made["created_by"], made["active"]) == (
        "web:dan",
        "web:erin",
        "operator:cli",
        True,
    )

    code, out, _ = _run(config, capsys, "list")
    header, *rows = out.splitlines()
    assert code == 0 and header.split() == ["ID", "DELEGATOR", "DELEGATE", "STATE", "FROM", "UNTIL", "USES", "REASON"]
    assert [r.split()[:4] for r in rows] == [
        [made["id"], "web:dan", "web:erin", "active"],
        [later_id, "web:carol", "slack:U012AB3CD", "scheduled"],
        [made_id, "web:alice", "web:bob", "active"],
    ]
    code, out, _ = _run(config, capsys, "list", "--for", "web:ALICE", "--json")
    assert [d["id"] for d in json.loads(out)["items"]] == [made_id]

    code, out, err = _run(config, capsys, "revoke", made_id)
    assert code == 0 and out.startswith(f"{made_id}  revoked by operator:cli at "), err
    code, out, _ = _run(config, capsys, "revoke", made_id, "--json")  # again: answered as it is
    assert code == 0 and json.loads(out)["revoked_by"] == "operator:cli"
    code, out, _ = _run(config, capsys, "list", "--json")
    assert made_id not in {d["id"] for d in json.loads(out)["items"]}
    code, out, _ = _run(config, capsys, "list", "--all", "--for", "web:alice")
    assert out.splitlines()[1].split()[:4] == [made_id, "web:alice", "web:bob", "revoked"]
    code, out, _ = _run(config, capsys, "show", made_id)
    assert code == 0 and out.splitlines()[0] == f"{made_id}  revoked  web:bob decides for web:alice"
    assert [line.split()[1:] for line in out.splitlines()[-2:]] == [
        ["created", "operator:cli"],
        ["revoked", "operator:cli"],
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "web:alice", "--to", "web:ALICE"], "--to: must be another person than the delegator"),
        (["--from", "alice", "--to", "web:bob"], "--from: 'alice' is not an identity: write it as kind:id"),
        (["--from", "web:alice", "--to", "nope:bob"], "--to: 'nope' is not an identity kind"),
        (["--from", "web:alice", "--to", "web:bob", "--until", "91d"], "--until: a delegation lasts at most 90 days"),
        (["--from", "web:alice", "--to", "web:bob", "--until", "soon"], "--until: 'soon' is neither an RFC 3339"),
        (["--from", "web:alice", "--to", "web:bob", "--until", "2031-07-15"], "--until: must be an RFC 3339"),
        (["--from", "web:alice", "--to", "web:bob", "--start", "400d"], "--start: a delegation starts within 365 days"),
        (["--from", "web:alice", "--to", "web:bob", "--reason", "x" * 2001], "--reason: "),
    ],
)
def test_a_refused_delegation_names_the_option_and_creates_nothing(
    config: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    until = [] if "--until" in args else ["--until", "14d"]
    code, out, err = _run(config, capsys, "add", *args, *until)
    assert code == 2 and out == ""
    assert _refusal(err).startswith(f"hitl-gateway: validation_error: {message}")
    code, out, _ = _run(config, capsys, "list", "--all", "--json")
    assert code == 0 and json.loads(out) == {"items": []}


def test_revoke_or_show_an_unknown_delegation_and_a_bad_for(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(config, capsys, "revoke", "nope")
    assert code == 2 and _refusal(err) == "hitl-gateway: not_found: delegation 'nope' not found"
    code, _, err = _run(config, capsys, "show", "nope")
    assert code == 2 and _refusal(err) == "hitl-gateway: not_found: delegation 'nope' not found"
    code, _, err = _run(config, capsys, "list", "--for", "alice")
    assert code == 2 and _refusal(err).startswith("hitl-gateway: validation_error: --for: 'alice' is not an identity")
    code, _, err = _run(config, capsys, "list", "--for", " ")
    assert code == 2 and _refusal(err).startswith("hitl-gateway: validation_error: --for: is empty")


def test_delegation_until_a_duration_or_a_date_time() -> None:
    assert _when("14d", "--until", NOW) == "2031-07-15T09:30:15Z"  # to the second
    assert _when("90m", "--start", NOW) == "2031-07-01T11:00:15Z"
    assert _when("2031-07-15T00:00:00+02:00", "--until", NOW) == "2031-07-15T00:00:00+02:00"  # the API reads it
    with pytest.raises(ValidationError, match=r"^--start: 'tomorrow' is neither"):
        _when("tomorrow", "--start", NOW)


def test_delegation_rows_name_the_state_of_each() -> None:
    base = {"delegator": "web:alice", "delegate": "web:bob", "uses": 2, "reason": "on\nholiday", "revoked_at": None}
    items = [
        base | {"id": "a", "from": "2031-07-01T00:00:00.5Z", "until": "2031-07-02T00:00:00Z"},
        base | {"id": "b", "from": "2031-07-02T00:00:00Z", "until": "2031-07-03T00:00:00Z"},
        base | {"id": "c", "from": "2031-06-01T00:00:00Z", "until": "2031-06-02T00:00:00Z"},
        base | {"id": "d", "from": "2031-07-01T00:00:00Z", "until": "2031-07-02T00:00:00Z", "revoked_at": "x"},
    ]
    _, rows = delegation_rows(items, NOW)
    assert [r[3] for r in rows] == ["active", "scheduled", "ended", "revoked"]
    assert rows[0][4:] == ["2031-07-01T00:00:00Z", "2031-07-02T00:00:00Z", "2", "on holiday"]
