"""h. LangGraph interrupt/resume on its SqliteSaver (file DB, WAL), in process, for the ratios.

Each run: invoke a one-node graph whose node calls `interrupt()` (the suspend: the checkpoint is
written), then `Command(resume=...)` on the same thread (the resume). Needs the `bench` extra.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, TypedDict


class _State(TypedDict, total=False):
    amount: int
    decision: str


def available() -> bool:
    try:
        import langgraph
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        return False
    return True


def run(workdir: Path, count: int = 1000) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    def charge(state: _State) -> _State:
        decision = interrupt({"title": "Charge ACME $42", "args": {"amount": state.get("amount")}})
        return {"decision": str(decision)}

    builder = StateGraph(_State)
    builder.add_node("charge", charge)
    builder.add_edge(START, "charge")
    builder.add_edge("charge", END)
    db = workdir / "langgraph.db"
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    graph = builder.compile(checkpointer=saver)
    cfgs = [{"configurable": {"thread_id": f"t-{n}"}} for n in range(count)]
    t0 = time.perf_counter()
    for cfg in cfgs:
        graph.invoke({"amount": 4200}, cfg)  # runs to the interrupt: the suspend
    suspend_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for cfg in cfgs:
        out = graph.invoke(Command(resume="approve"), cfg)
        assert out["decision"] == "approve"
    resume_s = time.perf_counter() - t0
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    import langgraph.version as lv

    return {
        "suspend_per_s": round(count / suspend_s, 1),
        "resume_per_s": round(count / resume_s, 1),
        "count": count,
        "sqlite": f"journal_mode={journal} synchronous={sync}",
        "langgraph": getattr(lv, "__version__", "?"),
    }
