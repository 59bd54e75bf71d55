"""Fixtures for the framework examples: the Telegram fake, the payment API, one gateway each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from examples.invoice_agent.payments import PaymentsAPI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.frameworks.stack import Stack
from tests.telegram.conftest import TOKEN

StackFactory = Callable[..., Stack]


@pytest.fixture
async def stack(tmp_path: Path, aiohttp_server: Callable[..., Any]) -> AsyncIterator[StackFactory]:
    """`stack(module, worker, *agent_args)`: a Stack whose gateway the test starts with `.serve()`."""
    tg_api = FakeTelegramAPI(TOKEN)
    tg_server = await aiohttp_server(tg_api.app)
    tg_api.base_url = str(tg_server.make_url("/bot"))
    payments = PaymentsAPI()
    pay_server = await aiohttp_server(payments.app())
    made: list[Stack] = []
    async with aiohttp.ClientSession() as http:

        def make(module: str, worker: str, *agent_args: str) -> Stack:
            url = f"http://127.0.0.1:{pay_server.port}"
            made.append(Stack(tmp_path, module, worker, tg_api, payments, url, http, list(agent_args)))
            return made[-1]

        try:
            yield make
        finally:
            for s in made:
                s.stop()
