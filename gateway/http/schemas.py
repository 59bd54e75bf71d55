"""Request body validation: every problem is a 400 that names the field."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from aiohttp import web

from gateway.core.depth import MAX_DEPTH, too_deep
from gateway.core.errors import InvalidJSON, UnsupportedMediaType, ValidationError
from gateway.core.extend import parse_extension
from gateway.core.models import Outcome
from gateway.service import SuspendRequest
from gateway.service.policies import PolicyValue

_SUSPEND_FIELDS = {
    "run_id",
    "step",
    "title",
    "summary",
    "args",
    "state",
    "channels",
    "approvers",
    "policy",
    "worker",
    "idempotency_key",
    "requested_by",
    "deadline",
    "args_schema",
    "editable",
}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})$")


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
            body = json.loads(raw, parse_constant=_no_constant)
            # What Python parses but cannot be hashed, encoded as UTF-8 or stored: refuse it here.
            json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except RecursionError:
        raise InvalidJSON("the request body is nested too deeply") from None
    except UnicodeEncodeError:
        raise InvalidJSON("the request body holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)") from None
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
    if b"\\u" in raw or b"\xed" in raw or b"\x00" in raw or raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _NOT_PLAIN
    if raw.count(b"[") + raw.count(b"{") >= 500:
        return _NOT_PLAIN
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except _NotFinite:
        return _NOT_PLAIN


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unknown(body: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise ValidationError(extra[0], f"unknown field (allowed: {', '.join(sorted(allowed))})")


def text(body: dict[str, Any], name: str, *, required: bool = True, max_len: int = 200, default: str = "") -> str:
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


def _strings(body: dict[str, Any], name: str, default: list[str], max_items: int = 50) -> list[str]:
    value = body.get(name, default)
    if value is None:
        value = default
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValidationError(name, "must be a list of non-empty strings")
    if len(value) > max_items:
        raise ValidationError(name, f"at most {max_items} items")
    return value


def _approvers(body: dict[str, Any]) -> tuple[str, ...]:
    """Identities (`kind:id`); the service checks each against its kind's syntax (a 400 naming
    `approvers[i]`), as it checks `requested_by` and `by`."""
    return tuple(_strings(body, "approvers", []))


def _policy(body: dict[str, Any]) -> PolicyValue:
    """A name, or an object (inline, or a configured name with choices): the service resolves
    it against the config and the caller's rights (gateway.service.policies)."""
    value = body.get("policy")
    if value is None or isinstance(value, str | dict):
        return value
    raise ValidationError("policy", "must be a policy name or an inline policy object")


def _deadline(body: dict[str, Any]) -> datetime | None:
    raw = body.get("deadline")
    if raw is None:
        return None
    if not isinstance(raw, str) or not _RFC3339.match(raw):
        raise ValidationError(
            "deadline", "must be an RFC 3339 date-time with an offset, like 2031-01-01T11:00:00+01:00"
        )
    try:
        return datetime.fromisoformat(raw.upper().replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError("deadline", f"{raw!r} is not a valid date-time") from None


def parse_suspend(body: dict[str, Any], max_state_bytes: int | None = None) -> SuspendRequest:
    _unknown(body, _SUSPEND_FIELDS)
    args = body.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValidationError("args", "must be a JSON object")
    channels = _strings(body, "channels", ["web"], max_items=20)
    if not channels:
        raise ValidationError("channels", "must name at least one channel")
    worker = body.get("worker")
    if worker is not None and not isinstance(worker, str):
        raise ValidationError("worker", "must be a worker name")
    return SuspendRequest(
        run_id=text(body, "run_id"),
        step=text(body, "step"),
        title=text(body, "title", max_len=300),
        summary=text(body, "summary", required=False, max_len=4000),
        args=args,
        state=body.get("state"),
        channels=tuple(channels),
        approvers=_approvers(body),
        policy=_policy(body),
        worker=worker,
        idempotency_key=opt_text(body, "idempotency_key", max_len=200),
        requested_by=opt_text(body, "requested_by", max_len=200),
        deadline=_deadline(body),
        args_schema=body.get("args_schema"),  # checked by the service (gateway.core.edits)
        editable=body.get("editable"),
    )


def parse_outcome(body: dict[str, Any]) -> Outcome:
    value = body.get("outcome")
    if value not in ("approve", "reject"):
        raise ValidationError("outcome", "must be 'approve' or 'reject'")
    return Outcome(value)


def on_behalf_of(body: dict[str, Any]) -> str | None:
    """The optional `by` of an operator's call: whom the operator acted for. Kept as
    `on_behalf_of`; the operator itself is always the one recorded as deciding."""
    return opt_text(body, "by", max_len=200) or None


def parse_decision(body: dict[str, Any]) -> tuple[Outcome, str | None, str | None, dict[str, Any] | None]:
    """(outcome, on_behalf_of, comment, edited args)."""
    _unknown(body, {"outcome", "comment", "by", "args"})
    outcome = parse_outcome(body)
    args = body.get("args")
    if args is not None and not isinstance(args, dict):
        raise ValidationError("args", "must be a JSON object (the edited args)")
    return outcome, on_behalf_of(body), opt_text(body, "comment"), args


def parse_extend(body: dict[str, Any]) -> tuple[timedelta, str | None]:
    """`POST /v1/approvals/{id}/extend`: (duration, on_behalf_of)."""
    _unknown(body, {"duration", "by"})
    if body.get("duration") is None:
        raise ValidationError("duration", "is required, like '1h'")
    return parse_extension(body["duration"]), on_behalf_of(body)


def parse_cancel(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """(on_behalf_of, reason)."""
    _unknown(body, {"by", "reason"})
    return on_behalf_of(body), opt_text(body, "reason")


def parse_resend(body: dict[str, Any]) -> tuple[str, str | None]:
    """`POST /v1/approvals/{id}/cards/resend`: (channel, on_behalf_of)."""
    _unknown(body, {"channel", "by"})
    return text(body, "channel"), on_behalf_of(body)


def parse_token_decision(body: dict[str, Any]) -> tuple[str, Outcome, str | None]:
    _unknown(body, {"token", "outcome", "comment"})
    token = text(body, "token", max_len=2000)
    return token, parse_outcome(body), opt_text(body, "comment")
