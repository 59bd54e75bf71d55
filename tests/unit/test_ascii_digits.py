"""Numbers typed by an operator are ASCII digits: str.isdigit also says yes to '²' or '١', which
int() refuses, so a check with it alone let them through to a traceback instead of its message."""

from __future__ import annotations

import pytest

from gateway.cli.audit import anchor_of
from gateway.core.errors import ConfigError
from gateway.mcp.cli import parse_listen

DIGEST = "a" * 64


@pytest.mark.parametrize("seq", ["²", "١٢", "①"])
def test_an_anchor_of_digits_that_are_not_ascii_is_refused_by_name(seq: str) -> None:
    with pytest.raises(ConfigError, match="is not SEQ:HASH"):
        anchor_of(f"{seq}:{DIGEST}")
    assert anchor_of(f"12:{DIGEST}") == (12, DIGEST)


@pytest.mark.parametrize("port", ["²", "٨٠٨٠"])
def test_a_listen_port_of_digits_that_are_not_ascii_is_refused_by_name(port: str) -> None:
    with pytest.raises(ValueError, match="expected HOST:PORT"):
        parse_listen(f"127.0.0.1:{port}")
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
