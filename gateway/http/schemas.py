"""Request bodies: JSON decoding (strict: no NaN, no lone surrogates, bounded nesting), then the
contract's models (gateway.contract: every problem a 400 that names the field), then the
service's inputs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from aiohttp import web

from gateway import contract
from gateway.core.depth import MAX_DEPTH, too_deep
from gateway.core.errors import InvalidJSON, UnsupportedMediaType, ValidationError
from gateway.core.jsontext import SURROGATE_WORDS, may_hold_surrogate
from gateway.core.models import Outcome, StepRecord
from gateway.core.rules import Facts, facts_from_body
from gateway.core.traces import parse_traceparent
from gateway.service import SuspendRequest
from gateway.service.journal import step_from_body

_SUSPEND_FIELDS = contract.allowed(contract.SuspendBody)


async def read_json(request: web.Request) -> dict[str, Any]:
    ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
    # curl's -d sends form-urlencoded by default: accept it (and text/plain) when the body is JSON.
    if ctype not in ("application/json", "", "application/x-www-form-urlencoded", "text/plain"):
        raise UnsupportedMediaType(f"Content-Type must be application/json, got {ctype!r}")
    return decode_body(await request.read())


def decode_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or InvalidJSON (400) saying what is wrong."""
    if not raw.strip():
        raise InvalidJSON("the request body is empty; send a JSON object")
    if too_deep(raw):  # before the parser, the redactor or the encoder recurse over it
        raise InvalidJSON(f"the request body is nested more than {MAX_DEPTH} levels deep")
    try:
        body = _loads_plain(raw)
        if body is _NOT_PLAIN:
            body = _loads(_STRICT, raw)
            # What Python parses but cannot be hashed, encoded as UTF-8 or stored: refuse it here.
            json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except RecursionError:
        raise InvalidJSON("the request body is nested too deeply") from None
    except UnicodeEncodeError:
        raise InvalidJSON(f"the request body {SURROGATE_WORDS}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJSON(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidJSON("the request body must be a JSON object")
    return body


class _NotFinite(Exception):
    """A number that parses to +-inf (e.g. 1e999): the full check below words the error."""


_NOT_PLAIN = object()


def _finite(text: str) -> float:
    value = float(text)  # what json.loads does for a float literal
    if value - value != 0.0:
        raise _NotFinite
    return value


def _loads_plain(raw: bytes) -> Any:
    """json.loads(raw) for a body that the re-encoding check cannot refuse, else _NOT_PLAIN.

    That check refuses three things: a lone surrogate (only from a `\\u` escape or raw UTF-8
    surrogate bytes, which start with 0xED; a NUL byte or a UTF-16 byte order mark means another
    encoding, decoded with surrogates allowed), a float that overflowed to inf (seen by `_finite`
    as it is parsed) and nesting deep enough to exhaust the recursion limit (impossible with
    fewer than 500 brackets). A body free of all three skips the second pass over it: the
    result, and every error, are the same as before (`tests/unit/test_read_json.py`)."""
    if may_hold_surrogate(raw):
        return _NOT_PLAIN
    if raw.count(b"[") + raw.count(b"{") >= 500:
        return _NOT_PLAIN
    try:
        return _loads(_PLAIN, raw)
    except _NotFinite:
        return _NOT_PLAIN


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _loads(decoder: json.JSONDecoder, raw: bytes) -> Any:
    """json.loads(raw, **options) exactly, without building a decoder (and its scanner) per body."""
    return decoder.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))


_PLAIN = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
_STRICT = json.JSONDecoder(parse_constant=_no_constant)  # \u escapes (ensure_ascii senders), odd encodings


def text(body: dict[str, Any], name: str, *, required: bool = True, max_len: int = 200, default: str = "") -> str:
    """One string field of a body with no model (a `by` of a retry, which takes any body)."""
    value = body.get(name)
    if value is None:
        if required:
            raise ValidationError(name, "is required")
        return default
    if not isinstance(value, str):
        raise ValidationError(name, f"must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise ValidationError(name, "must not be empty")
    if len(value) > max_len:
        raise ValidationError(name, f"must be at most {max_len} characters")
    return value


def opt_text(body: dict[str, Any], name: str, max_len: int = 2000) -> str | None:
    return text(body, name, required=False, max_len=max_len) if body.get(name) is not None else None


def parse_suspend(body: dict[str, Any], max_state_bytes: int | None = None) -> SuspendRequest:
    m = contract.validate(contract.SuspendBody, body)
    return SuspendRequest(
        run_id=m.run_id,
        step=m.step,
        title=m.title,
        summary=m.summary or "",
        args=m.args if m.args is not None else {},
        state=m.state,
        channels=tuple(m.channels) if m.channels is not None else ("web",),
        approvers=tuple(m.approvers or ()),  # the service checks each identity's syntax (approvers[i])
        policy=m.policy,  # the service resolves it (gateway.service.policies)
        worker=m.worker,
        idempotency_key=m.idempotency_key,
        requested_by=m.requested_by,
        deadline=m.deadline,
        args_schema=m.args_schema,  # checked by the service (gateway.core.edits)
        editable=m.editable,
        code_version=m.code_version,
        context=m.context,
        trace=parse_traceparent(m.traceparent, m.tracestate),  # malformed: ignored, per W3C
    )


def parse_evaluate(body: dict[str, Any]) -> Facts:
    """`POST /v1/rules/evaluate`: the facts a suspend of this body by `agent` would give the rules."""
    contract.validate(contract.EvaluateBody, body)
    return facts_from_body(body)


def on_behalf_of(body: dict[str, Any]) -> str | None:
    """The optional `by` of an operator's call: whom the operator acted for. Kept as
    `on_behalf_of`; the operator itself is always the one recorded as deciding."""
    return opt_text(body, "by", max_len=200) or None


@dataclass(frozen=True, slots=True)
class DecisionInput:
    """`POST /v1/approvals/{id}/decision`. `args_hash`: the `current_args_hash` of the approval
    the caller read; an approve on other args is then a 409 (`stale_round`)."""

    outcome: Outcome
    on_behalf_of: str | None
    comment: str | None
    args: dict[str, Any] | None
    args_hash: str | None
    grant: str | None = None


def parse_decision(body: dict[str, Any]) -> DecisionInput:
    m = contract.validate(contract.DecisionBody, body)
    return DecisionInput(Outcome(m.outcome), m.by or None, m.comment, m.args, m.args_hash, m.grant)


def parse_extend(body: dict[str, Any]) -> tuple[timedelta, str | None, int | None]:
    """`POST /v1/approvals/{id}/extend`: (duration, on_behalf_of, the extensions the caller saw)."""
    m = contract.validate(contract.ExtendBody, body)
    return m.duration, m.by or None, m.extensions


def parse_cancel(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """(on_behalf_of, reason)."""
    m = contract.validate(contract.CancelBody, body)
    return m.by or None, m.reason


def parse_resend(body: dict[str, Any]) -> tuple[str, str | None]:
    """`POST /v1/approvals/{id}/cards/resend`: (channel, on_behalf_of)."""
    m = contract.validate(contract.ResendBody, body)
    return m.channel, m.by or None


def parse_token_decision(body: dict[str, Any]) -> tuple[str, Outcome, str | None]:
    m = contract.validate(contract.TokenDecisionBody, body)
    return m.token, Outcome(m.outcome), m.comment


def parse_step(body: dict[str, Any], run_id: str, name: str) -> StepRecord:
    """`PUT /v1/runs/{run_id}/steps/{name}`: the path names the step (a body's own name and
    run_id are ignored)."""
    return step_from_body(body, run_id, name)
