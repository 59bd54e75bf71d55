"""The run page: one run's approvals, journal steps, resume jobs (with their output tail) and a
timeline of all of them, for signed-in users (who see every approval in the inbox).

Run ids are per agent: two agents' runs of the same id are two runs, and a page shows one. The
approval page links to its run with `?agent=NAME` when an agent made it; without `agent`, the
one run of that id is shown, or, when several agents use it, a list to choose from (each is in
the inbox already). Step outputs are not shown: the journal keeps them raw, for replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web

from gateway.core.errors import NotFound
from gateway.core.principals import NO_AGENT, agent_namespace
from gateway.http.usecases import CLOCK, READS
from gateway.http.web.argsview import outcome_heading, plain_title
from gateway.http.web.auth import render, require
from gateway.http.web.sessions import User
from gateway.http.web.view import humanize
from gateway.service.queries import RunView

routes = web.RouteTableDef()


@dataclass(frozen=True, slots=True)
class Moment:
    """One line of a run's timeline."""

    at: datetime
    what: str
    detail: str = ""
    approval_id: str | None = None
    title: str = ""


def seconds(start: datetime, end: datetime) -> str:
    s = (end - start).total_seconds()
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s" if s < 60 else humanize(end - start)


def timeline(view: RunView) -> list[Moment]:
    """The run's approvals' events and its journal's steps, in time order."""
    moments: list[Moment] = []
    for a in view.approvals:
        for e in view.events.get(a.id, []):
            by = f"by {e.actor}" if e.actor else ""
            moments.append(Moment(e.at, e.kind.replace("_", " "), by, a.id, plain_title(a)))
    for step in view.steps:
        tries = f", {step.attempts} attempts" if step.attempts != 1 else ""
        took = seconds(step.started_at, step.finished_at)
        moments.append(Moment(step.started_at, f"step {step.name}", f"{step.status.value} in {took}{tries}"))
    return sorted(moments, key=lambda m: m.at)


def run_url(run_id: str, namespace: str, *, explicit: bool = False) -> str:
    """The page of the run `run_id` of `namespace`; `explicit`: name no agent's as `?agent=`."""
    path = f"/runs/{quote(run_id, safe='')}"
    if namespace:
        return f"{path}?{urlencode({'agent': namespace.removeprefix('agent:')})}"
    return f"{path}?agent=" if explicit else path


@routes.get("/runs/{run_id}")
@require()
async def run_page(request: web.Request, user: User) -> web.Response:
    """One run: its approvals, journal steps with timings and attempts, resume jobs with their
    output tail, and a timeline (`agent`: whose run of that id; empty: no agent's)."""
    reads, run_id = request.config_dict[READS], request.match_info["run_id"]
    if "agent" in request.query:
        namespace = agent_namespace(request.query["agent"])
    else:
        used = await reads.run_namespaces(run_id)
        if len(used) > 1:
            choices = [(ns.removeprefix("agent:") or "(no agent)", run_url(run_id, ns, explicit=True)) for ns in used]
            return render(request, "run_choice.html", {"run_id": run_id, "choices": choices})
        namespace = used[0] if used else NO_AGENT
    view = await reads.run(run_id, namespace)
    if view.empty:
        raise NotFound(f"no run {run_id!r}" + (f" of {namespace}" if namespace else ""))
    now = request.config_dict[CLOCK].now()
    moments = timeline(view)
    start = moments[0].at if moments else now
    ctx: dict[str, Any] = {
        "view": view,
        "agent": namespace.removeprefix("agent:"),
        "approvals": [(a, outcome_heading(a) if a.status.final else "waiting") for a in view.approvals],
        "steps": [(s, seconds(s.started_at, s.finished_at)) for s in view.steps],
        "titles": {a.id: plain_title(a) for a in view.approvals},  # with the values that ran
        "jobs": [(a, view.jobs[a.id]) for a in view.approvals if a.id in view.jobs],
        "moments": [(m, "+" + humanize(m.at - start)) for m in moments],
        "age": humanize(now - start),
    }
    return render(request, "run.html", ctx)
