"""A local fake of the Slack Web API (and of `response_url`) on loopback, for the REAL
slack_sdk AsyncWebClient: it records every call and injects 429 + Retry-After, 5xx and
`ok:false` errors on demand. It refuses messages over Slack's limits as Slack does
(`slack_limits.py`), and serves Socket Mode (`slack_socket.py`). Also builds signed interaction
requests like Slack sends them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

from aiohttp import web

from adapters.slack.verify import sign
from tests.fakes.server import serve_local
from tests.fakes.slack_limits import message_error, view_error
from tests.fakes.slack_socket import APP_TOKEN, FakeSockets

BOT_TOKEN = "xoxb-test-token"
SIGNING_SECRET = "test-signing-secret-0123456789"
TEAM_ID = "T0HOME"  # the workspace auth.test reports, and that every interaction built here names


@dataclass
class Call:
    method: str
    body: dict[str, Any]
    status: int
    ok: bool
    at: float = field(default_factory=time.monotonic)


@dataclass
class Failure:
    status: int = 200
    error: str | None = None
    retry_after: str | None = None


class FakeSlack:
    def __init__(self, token: str = BOT_TOKEN, clock: Callable[[], float] = time.time) -> None:
        self.token = token
        self.clock = clock  # message timestamps (tests point it at their FakeClock)
        self.calls: list[Call] = []
        self.responses: list[tuple[str, dict[str, Any]]] = []  # (response_url key, body)
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.failures: dict[str, deque[Failure]] = defaultdict(deque)
        self.holds: dict[str, asyncio.Event] = {}
        self.arrived: list[str] = []  # methods whose reply is being held
        self.missing_scopes: set[str] = set()
        self.sockets = FakeSockets()
        self._arrivals: dict[str, asyncio.Event] = {}
        self._runner: web.AppRunner | None = None
        self.url = ""
        self._n = 0

    # ---------------------------------------------------------------- control
    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/response/{key}", self._response_url)
        self.sockets.install(app)
        self._runner, self.url = await serve_local(app)
        return self.url

    async def stop(self) -> None:
        for event in self.holds.values():
            event.set()
        await self.sockets.stop()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, key: str) -> str:
        return f"{self.url}/response/{key}"

    def fail(
        self,
        method: str,
        *,
        status: int = 200,
        error: str | None = None,
        retry_after: str | None = None,
        times: int = 1,
    ) -> None:
        """The next `times` calls of `method` fail like this."""
        for _ in range(times):
            self.failures[method].append(Failure(status, error, retry_after))

    def hold(self, method: str) -> asyncio.Event:
        """Calls of `method` hang until the returned event is set (a slow Slack)."""
        return self.holds.setdefault(method, asyncio.Event())

    def _arrival(self, method: str) -> asyncio.Event:
        return self._arrivals.setdefault(method, asyncio.Event())

    async def wait_arrived(self, method: str) -> None:
        """Until a held call of `method` has reached the fake (at most 10 s)."""
        await asyncio.wait_for(self._arrival(method).wait(), 10)

    def calls_to(self, method: str, *, ok_only: bool = False) -> list[dict[str, Any]]:
        return [c.body for c in self.calls if c.method == method and (c.ok or not ok_only)]

    def replies(self, key: str) -> list[dict[str, Any]]:
        return [body for k, body in self.responses if k == key]

    # ---------------------------------------------------------------- handlers
    async def _body(self, request: web.Request) -> dict[str, Any]:
        if request.method == "GET":
            return dict(request.query)
        if request.content_type == "application/json":
            data = await request.json()
            return data if isinstance(data, dict) else {}
        form = parse_qs((await request.read()).decode())
        return {k: v[0] for k, v in form.items()}

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await self._body(request)
        token = APP_TOKEN if method == "apps.connections.open" else self.token  # the app-level token
        if request.headers.get("Authorization") != f"Bearer {token}":
            return self._record(method, body, web.json_response({"ok": False, "error": "invalid_auth"}))
        queue = self.failures.get(method)
        if queue:
            return self._record(method, body, self._failure(queue.popleft()))
        handler = {
            "chat.postMessage": self._post,
            "chat.update": self._update,
            "views.open": self._views_open,
            "chat.postEphemeral": self._ok,
            "conversations.history": self._history,
            "apps.connections.open": lambda _: self.sockets.open_url(self.url),
            "auth.test": lambda _: {"ok": True, "team_id": TEAM_ID, "team": "Home", "user_id": "UBOT"},
        }.get(method)
        reply = handler(body) if handler else {"ok": False, "error": "unknown_method"}
        if method in self.holds:  # done on Slack's side, but the reply is slow to come back
            self.arrived.append(method)
            self._arrival(method).set()
            await self.holds[method].wait()
        return self._record(method, body, web.json_response(reply))

    def _record(self, method: str, body: dict[str, Any], response: web.Response) -> web.Response:
        ok = response.status == 200 and isinstance(response.body, bytes) and b'"ok": true' in response.body
        self.calls.append(Call(method, body, response.status, ok))
        return response

    @staticmethod
    def _failure(f: Failure) -> web.Response:
        headers = {"Retry-After": f.retry_after} if f.retry_after is not None else None
        if f.status >= 500:
            return web.Response(status=f.status, text="upstream connect error", headers=headers)
        return web.json_response({"ok": False, "error": f.error or "ratelimited"}, status=f.status, headers=headers)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        error = message_error(body)
        if error:
            return {"ok": False, "error": error}
        self._n += 1
        channel, ts = str(body.get("channel")), f"{int(self.clock())}.{self._n:06d}"
        self.messages[(channel, ts)] = dict(body)
        return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts, "text": body.get("text")}}

    def _update(self, body: dict[str, Any]) -> dict[str, Any]:
        key = (str(body.get("channel")), str(body.get("ts")))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        error = message_error(body)
        if error:
            return {"ok": False, "error": error}
        self.messages[key] = {**self.messages[key], **body}
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _history(self, query: dict[str, Any]) -> dict[str, Any]:
        if "history" in self.missing_scopes:
            return {"ok": False, "error": "missing_scope"}
        channel, oldest = str(query.get("channel")), float(query.get("oldest") or 0)
        found = [
            {"ts": ts, "text": m.get("text"), **({"metadata": m["metadata"]} if "metadata" in m else {})}
            for (ch, ts), m in self.messages.items()
            if ch == channel and float(ts) >= oldest
        ]
        return {"ok": True, "messages": sorted(found, key=lambda m: m["ts"], reverse=True), "has_more": False}

    @staticmethod
    def _views_open(body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        view = body.get("view") or {}
        if isinstance(view, str):
            view = json.loads(view)
        error = view_error(view)
        if error:
            return {"ok": False, "error": error}
        problem = _modal_problem(view)
        if problem:
            return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": [problem]}}
        return {"ok": True, "view": {"id": "V0001", **view}}

    @staticmethod
    def _ok(body: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    async def _response_url(self, request: web.Request) -> web.Response:
        self.responses.append((request.match_info["key"], await request.json()))
        return web.Response(text="ok")


# ---------------------------------------------------------------- what Slack sends us


_TRIGGERS = itertools.count(123)


def block_actions(
    user: str, action_id: str, value: str, *, channel: str = "C0CARDS", ts: str = "1700000001.000001", **extra: Any
) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "team": {"id": TEAM_ID, "domain": "home"},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM_ID},
        "channel": {"id": channel},
        "container": {"type": "message", "message_ts": ts, "channel_id": channel},
        "actions": [{"type": "button", "action_id": action_id, "value": value, "block_id": "hitl_actions"}],
        "trigger_id": f"trig-{next(_TRIGGERS)}",  # unique per interaction, as Slack's
        **extra,
    }


def view_submission(user: str, private_metadata: str, comment: str) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "team": {"id": TEAM_ID, "domain": "home"},
        "user": {"id": user, "team_id": TEAM_ID},
        "view": {
            "callback_id": "hitl:reason",
            "private_metadata": private_metadata,
            "state": {"values": {"reason": {"reason_input": {"type": "plain_text_input", "value": comment}}}},
        },
        "trigger_id": f"trig-{next(_TRIGGERS)}",  # a view_submission carries one too (Bolt's ViewSubmitAction)
    }


def signed(payload: dict[str, Any], now: float, secret: str = SIGNING_SECRET) -> tuple[bytes, dict[str, str]]:
    """The form body and headers Slack would send for `payload` at `now`."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    ts = str(int(now))
    headers = {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sign(secret, ts, body),
        "Content-Type": "application/x-www-form-urlencoded",
    }
    return body, headers


_INPUTS = {"plain_text_input", "number_input", "static_select"}


def _modal_problem(view: dict[str, Any]) -> str | None:
    """What Slack refuses in a modal's inputs, beyond slack_limits.view_error (title, metadata,
    block count): unique block ids, an input's label and element, a number_input's string values,
    a static_select's 1-100 options with an initial option among them."""
    blocks = view.get("blocks") or []
    ids = [b.get("block_id") for b in blocks if b.get("block_id")]
    if len(ids) != len(set(ids)):
        return "[ERROR] block_id must be unique"
    problems = (_input_problem(b) for b in blocks if b.get("type") == "input")
    return next((p for p in problems if p), None)


def _input_problem(b: dict[str, Any]) -> str | None:
    el = b.get("element") or {}
    if not b.get("label") or el.get("type") not in _INPUTS or not el.get("action_id"):
        return "[ERROR] an input needs a label and a supported element with an action_id"
    if el["type"] == "number_input":
        bad = [k for k in ("initial_value", "min_value", "max_value") if k in el and not isinstance(el[k], str)]
        return f"[ERROR] {bad[0]} must be a string" if bad else None
    if el["type"] == "static_select":
        options = el.get("options") or []
        if not 1 <= len(options) <= 100:
            return "[ERROR] a static_select needs 1 to 100 options"
        if "initial_option" in el and el["initial_option"] not in options:
            return "[ERROR] initial_option must be one of the options"
    return None


def edit_submission(user: str, private_metadata: str, values: dict[str, Any]) -> dict[str, Any]:
    """The Edit & approve modal submitted: `values` is {arg name: the typed or chosen value}."""
    state = {}
    for name, value in values.items():
        if isinstance(value, dict):  # a static_select's option
            state[f"arg:{name}"] = {"value": {"type": "static_select", "selected_option": value}}
        else:
            state[f"arg:{name}"] = {"value": {"type": "plain_text_input", "value": value}}
    return {
        "type": "view_submission",
        "team": {"id": TEAM_ID, "domain": "home"},
        "user": {"id": user, "team_id": TEAM_ID},
        "view": {"callback_id": "hitl:edit", "private_metadata": private_metadata, "state": {"values": state}},
        "trigger_id": f"trig-{next(_TRIGGERS)}",
    }
