"""docs/reference/http.md is written from the contract's models: it fails here when stale."""

from __future__ import annotations

from gateway.http import reference


def test_the_committed_http_reference_is_what_the_models_give() -> None:
    assert reference.DOC.read_text() == reference.render(), "stale: run python -m gateway.http.reference"


def test_the_reference_lists_every_suspend_field() -> None:
    text = reference.render()
    for field in ("run_id", "code_version", "args_schema", "idempotency_key"):
        assert f"| `{field}` |" in text
