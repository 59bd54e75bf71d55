"""A Telegram webhook update read for the gateway's six fields: straight from the JSON (what
`adapters.telegram.parse.read_update` does) against python-telegram-bot's `Update.de_json` and its
object tree (what the webhook did before), on the same press body.

    python -m bench.telegram_parse [--n 20000]

Prints microseconds per update, best of 5 interleaved rounds (CPU time of this process, so a
busy machine moves both sides alike). `python -m bench.cycle` is the end-to-end measure.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from telegram import Bot, Update

from adapters.telegram.parse import read_update
from tests.fakes.telegram_api import callback_update

USER = {"id": 111, "is_bot": False, "first_name": "Alice", "username": "alice"}
RAW = json.dumps(callback_update(1, "q-1", USER, -1001234567890, 42, "a|0123456789abcdef|t|0123456789abcdef")).encode()
BOT = Bot("123456:BENCH-token_abc")


def before() -> Any:
    """The old webhook: the whole Update, then the same six fields."""
    update = Update.de_json(json.loads(RAW), BOT)
    assert update is not None and update.callback_query is not None
    q = update.callback_query
    m = q.message
    assert m is not None
    return (update.update_id, q.id, q.from_user.id, q.from_user.username, m.chat.id, m.message_id, q.data)


def after() -> Any:
    return read_update(json.loads(RAW))


def per_call(fn: Callable[[], Any], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20000)
    args = p.parse_args()
    rounds: dict[str, list[float]] = {"before (Update.de_json)": [], "after (read_update)": []}
    for _ in range(5):
        rounds["before (Update.de_json)"].append(per_call(before, args.n))
        rounds["after (read_update)"].append(per_call(after, args.n))
    best = {name: min(xs) for name, xs in rounds.items()}
    for name, us in best.items():
        print(f"{name:<26} {us:7.2f} µs per update")
    b, a = best.values()
    print(f"{'saved':<26} {b - a:7.2f} µs ({b / a:.1f}x)")


if __name__ == "__main__":
    main()
