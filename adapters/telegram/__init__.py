"""Telegram channel: cards with Approve/Reject buttons, signed callbacks, outcome sync.

`gateway.channels.load_channel("telegram", runtime)` calls `create_channel(runtime)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.telegram.channel import TelegramChannel

if TYPE_CHECKING:
    from gateway.runtime import Runtime


def create_channel(runtime: Runtime) -> TelegramChannel:
    return TelegramChannel(runtime)


__all__ = ["TelegramChannel", "create_channel"]
