"""The journal and housekeeping (inbound de-duplication, web sessions, prompts) ports, written
once over the named SQL (backend.py)."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from gateway.core.clock import from_ts, to_ts
from gateway.core.models import NewEvent, StepRecord
from gateway.store.base import Prompt, WebSession
from gateway.store.rows import Row, dumps, step_from_row
from gateway.store.shared.backend import Backend, Tx
from gateway.store.shared.tx import encode_events

__all__ = ["HousekeepingSQL", "JournalSQL"]


def step_values(step: StepRecord, namespace: str) -> tuple[Any, ...]:
    """The parameters of `record_step`."""
    output = None if step.output is None else dumps(step.output)
    times = (to_ts(step.started_at), to_ts(step.finished_at))
    return (step.run_id, step.name, step.status.value, output, step.attempts, *times, step.error, namespace)


def prompt_from_row(row: Row) -> Prompt:
    created, expires = from_ts(row["created_at"]), from_ts(row["expires_at"])
    assert created is not None and expires is not None
    return Prompt(row["key"], row["approval_id"], row["actor"], row["purpose"], created, expires)


def _web_session(row: Row) -> WebSession:
    created, expires = from_ts(row["created_at"]), from_ts(row["expires_at"])
    assert created is not None and expires is not None
    return WebSession(str(row["id"]), created, expires)


class JournalSQL(Backend):
    async def record_step(self, step: StepRecord, *, namespace: str) -> StepRecord:
        Q, values, key = self.Q, step_values(step, namespace), (step.run_id, namespace, step.name)

        async def op(tx: Tx) -> StepRecord:
            row = await tx.written(Q.record_step, values, Q.get_step, key)
            if row is None:  # the stored record had succeeded: it wins
                row = await tx.fetch_one(Q.get_step, key)
            return step_from_row(row)

        return await self.transact(op)

    async def get_steps(self, run_id: str, *, namespace: str) -> list[StepRecord]:
        return [step_from_row(r) for r in await self.fetch_all(self.Q.get_steps, (run_id, namespace))]

    async def run_namespaces(self, run_id: str) -> list[str]:
        return [str(r[0]) for r in await self.fetch_all(self.Q.run_namespaces, (run_id,))]

    async def list_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = await self.fetch_all(self.Q.list_runs, (limit,))
        return [{**dict(r), "steps": int(r["steps"]), "attempts": int(r["attempts"])} for r in rows]

    async def step_stats(self, limit: int = 100) -> list[dict[str, Any]]:
        return [dict(r) for r in await self.fetch_all(self.Q.step_stats, (limit,))]


class HousekeepingSQL(Backend):
    async def remember_inbound(self, key: str, now: datetime) -> bool:
        return await self.changed(self.Q.remember_inbound, (key, to_ts(now)))

    async def remember_delivery(self, keys: Sequence[str], now: datetime, events: Sequence[NewEvent] = ()) -> bool:
        t, encoded = to_ts(now), encode_events(events)

        async def op(tx: Tx) -> bool:
            if not await tx.insert_marks(keys, t or time.time()):
                return False  # the marks not seen yet are kept: they are this delivery's too
            await tx.insert_events(encoded)
            return True

        return await self.transact(op)

    async def prune(self, now: datetime, inbound_before: datetime, limit: int) -> int:
        Q = self.Q

        async def op(tx: Tx) -> int:
            marks = await tx.execute(Q.prune_inbound, (to_ts(inbound_before), limit))
            prompts = await tx.execute(Q.prune_prompts, (to_ts(now),))
            return marks + prompts + await tx.execute(Q.prune_sessions, (to_ts(now),))

        return await self.transact(op)

    async def create_session(self, session_id: str, user: str, now: datetime, expires_at: datetime) -> None:
        await self.changed(self.Q.create_session, (session_id, user, to_ts(now), to_ts(expires_at)))

    async def session_user(self, session_id: str, now: datetime) -> str | None:
        row = await self.fetch_one(self.Q.session_user, (session_id, to_ts(now)))
        return None if row is None else str(row[0])

    async def delete_session(self, session_id: str) -> bool:
        return await self.changed(self.Q.delete_session, (session_id,))

    async def delete_sessions(self, keep_users: Collection[str]) -> int:
        Q = self.Q

        async def op(tx: Tx) -> int:
            gone = [r[0] for r in await tx.fetch_all(Q.session_users) if r[0] not in keep_users]
            return sum([await tx.execute(Q.delete_user_sessions, (u,)) for u in gone])

        return await self.transact(op)

    async def user_sessions(self, user: str, now: datetime) -> list[WebSession]:
        rows = await self.fetch_all(self.Q.user_sessions, (user, to_ts(now)))
        return [_web_session(r) for r in rows]

    async def delete_user_session(self, user: str, session_id: str) -> bool:
        return await self.changed(self.Q.delete_own_session, (session_id, user))

    async def delete_other_sessions(self, user: str, keep: str) -> int:
        return await self.changed_rows(self.Q.delete_other_sessions, (user, keep))

    async def take_prompt(self, key: str, actor: str, now: datetime) -> Prompt | None:
        Q = self.Q

        async def op(tx: Tx) -> Prompt | None:
            await tx.execute(Q.prune_prompts, (to_ts(now),))
            row = await tx.fetch_one(Q.find_prompt, (key, actor))
            if row is None or await tx.execute(Q.delete_prompt, (key, actor)) != 1:
                return None  # none, or another taker's
            return prompt_from_row(row)

        return await self.transact(op)

    async def save_prompt(self, prompt: Prompt) -> None:
        p = prompt
        values = (p.key, p.approval_id, p.actor, p.purpose, to_ts(p.created_at), to_ts(p.expires_at))
        await self.changed(self.Q.save_prompt, values)
