"""Which run a journal request means. Run ids are per agent: an agent's key always reaches its
own namespace (another agent's run id is simply a different run); a resume token reaches its
approval's; an operator names an agent with `?agent=NAME` (empty: no agent's runs), or, without
it, gets the one namespace that uses the run id, and a 409 `ambiguous_run` naming `agent` when
several do (never a guess).
"""

from __future__ import annotations

from gateway.core.errors import AmbiguousRun, Forbidden
from gateway.core.principals import NO_AGENT, Principal, agent_namespace
from gateway.store import Store

__all__ = ["run_namespace"]


async def run_namespace(store: Store, run_id: str, caller: Principal, asked: str | None) -> str:
    """The namespace of `run_id` that `caller` means (`asked`: its `?agent=`, if given)."""
    named = None if asked is None else agent_namespace(asked)
    if not caller.is_operator:
        if named is not None and named != caller.namespace:
            raise Forbidden("agent: an agent's key reaches only its own runs (leave `agent` out)")
        return caller.namespace
    if named is not None:
        return named
    used = await store.run_namespaces(run_id)
    if len(used) > 1:
        raise AmbiguousRun(run_id, used)
    return used[0] if used else NO_AGENT
