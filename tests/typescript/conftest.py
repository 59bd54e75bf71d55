"""The `ts` fixture: a TsStack (tests/typescript/stack.py) with the SDK built and the fake payment API up."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from examples.invoice_agent.payments import PaymentsAPI
from tests.typescript.node import build
from tests.typescript.stack import TsStack


@pytest.fixture
async def ts(tmp_path: Path, aiohttp_server: Callable[..., Any]) -> AsyncIterator[TsStack]:
    build()
    payments = PaymentsAPI()
    server = await aiohttp_server(payments.app())
    async with aiohttp.ClientSession() as http:
        stack = TsStack(tmp_path, payments, f"http://127.0.0.1:{server.port}", http)
        try:
            yield stack
        finally:
            if stack.gw is not None:
                stack.gw.stop()
