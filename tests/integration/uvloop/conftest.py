"""Every test in this folder runs on uvloop, the loop `hitl-gateway serve` uses (gateway.cli.event_loop)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import uvloop

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """pytest-timeout's default (signal) method never fires on uvloop: its SIGALRM handler runs
    inside a loop callback, whose exception the loop swallows, so a hung test here would hang the
    whole run (a 30 s sleep under a 2 s timeout passed). The thread method dumps every stack and
    ends the run instead."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.timeout(method="thread"))


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> Mapping[str, Any]:
    return {"uvloop": uvloop.new_event_loop}
