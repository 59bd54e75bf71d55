"""What the operator commands print for people (gateway.cli.present): pure, given `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.cli.present import age, approval_rows, span, summary

NOW = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)


def _at(delta: timedelta) -> str:
    return (NOW - delta).isoformat().replace("+00:00", "Z")


def test_ages_are_in_their_largest_unit() -> None:
    assert [span(timedelta(seconds=s)) for s in (0, 59, 60, 3599, 7200, 5 * 86400 + 3600)] == [
        "0s",
        "59s",
        "1m",
        "59m",
        "2h",
        "5d",
    ]
    assert age(_at(timedelta(minutes=3, seconds=5)), NOW) == "3m" and age(None, NOW) == "-"
    assert age(_at(-timedelta(seconds=2)), NOW) == "0s"  # another machine's clock a little ahead


def test_rows_put_the_id_first_and_cut_long_titles() -> None:
    item = {"id": "a1", "status": "approved", "title": "x" * 80, "created_at": _at(timedelta(hours=2))}
    headers, rows = approval_rows([item | {"run_id": "r", "step": "s"}], NOW)
    assert headers == ["ID", "STATUS", "TITLE", "AGE", "RUN/STEP"]
    assert rows[0][0] == "a1" and len(rows[0][2]) == 50 and rows[0][2].endswith("…") and rows[0][3:] == ["2h", "r/s"]


def test_the_summary_reads_the_decision_and_keeps_the_last_events() -> None:
    view = {
        "id": "a1",
        "status": "rejected",
        "title": "Pay",
        "run_id": "r",
        "step": "s",
        "created_at": _at(timedelta(minutes=5)),
        "deadline": _at(-timedelta(hours=1)),
        "args": {"amount": 1},
        "decision": {"outcome": "reject", "decided_by": "operator:ann", "source": "human", "comment": "no"},
        "events": [{"at": _at(timedelta(0)), "kind": f"k{i}", "actor": None} for i in range(12)],
    }
    lines = summary(view, NOW)
    assert lines[0] == "a1  rejected  Pay"
    assert "  decision    rejected by operator:ann (human): no" in lines
    assert any(line.endswith("(in 1h)") for line in lines)
    assert lines[-1] == "    (2 earlier: --json prints them all)" and sum("k" in line for line in lines) == 10
