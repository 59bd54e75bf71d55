"""Pure retry arithmetic: exponential backoff with jitter."""

from __future__ import annotations

import random

__all__ = ["backoff"]


def backoff(attempt: int, *, base: float = 1.0, cap: float = 300.0, rand: float | None = None) -> float:
    """Seconds to wait before retry number `attempt` (1-based): equal jitter, so the delay is
    between half and all of min(cap, base * 2**(attempt-1))."""
    ceiling = min(cap, base * 2 ** min(max(0, attempt - 1), 64))  # 2**1024 would not fit a float
    r: float = random.random() if rand is None else rand
    return float(ceiling / 2 + r * ceiling / 2)
