"""docs/reference/configuration.md is written from the settings: it fails here when stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.settings import reference
from gateway.settings.load import SECTIONS


def test_the_committed_configuration_reference_is_what_the_settings_give() -> None:
    assert reference.DOC.read_text() == reference.render(), "stale: run python -m gateway.settings.reference"


def test_the_reference_lists_every_key_with_its_default_and_variable() -> None:
    text = reference.render()
    for section, keys in SECTIONS.items():
        assert f"## `[{section}]`" in text
        for key in keys:
            assert f"| `{key}` |" in text and f"`HITL_{section.upper()}_{key.upper()}`" in text
    assert "| `port` | integer | `8080` | `HITL_SERVER_PORT` |" in text
    assert '| `timeout` | `"30m"` |' in text  # [policies.NAME], from the Policy's own default


def test_check_says_stale_without_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "configuration.md"
    doc.write_text("old\n")
    monkeypatch.setattr(reference, "DOC", doc)
    assert reference.main(["--check"]) == 1 and doc.read_text() == "old\n"
    assert reference.main([]) == 0 and reference.main(["--check"]) == 0
