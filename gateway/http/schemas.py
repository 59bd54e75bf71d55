"""Request body validation: every problem is a 400 that names the field."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from gateway.errors import InvalidJSON, UnsupportedMediaType, ValidationError
from gateway.models import Outcome, Policy
from gateway.policy import parse_policy
from gateway.service import SuspendRequest

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
}
_APPROVER_KINDS = ("telegram", "slack", "web", "api")


async def read_json(request: web.Request) -> dict[str, Any]:
    ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
    # curl's -d sends form-urlencoded by default: accept it (and text/plain) when the body is JSON.
    if ctype not in ("application/json", "", "application/x-www-form-urlencoded", "text/plain"):
        raise UnsupportedMediaType(f"Content-Type must be application/json, got {ctype!r}")
    raw = await request.read()
    if not raw.strip():
        raise InvalidJSON("the request body is empty; send a JSON object")
    try:
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
    approvers = _strings(body, "approvers", [])
    for i, a in enumerate(approvers):
        kind, _, ident = a.partition(":")
        if kind not in _APPROVER_KINDS or not ident:
            raise ValidationError(
                f"approvers[{i}]",
                f"{a!r} is not like 'telegram:<user_id>', 'slack:<user_id>' or 'web:<name>'",
            )
    return tuple(approvers)


def _policy(body: dict[str, Any]) -> str | Policy | None:
    value = body.get("policy")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return parse_policy(value, name="inline", prefix="policy.")
    raise ValidationError("policy", "must be a policy name or an inline policy object")


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
    )


def parse_outcome(body: dict[str, Any]) -> Outcome:
    value = body.get("outcome")
    if value not in ("approve", "reject"):
        raise ValidationError("outcome", "must be 'approve' or 'reject'")
    return Outcome(value)


def parse_decision(body: dict[str, Any]) -> tuple[Outcome, str, str | None]:
    _unknown(body, {"outcome", "comment", "by"})
    outcome = parse_outcome(body)
    by = text(body, "by")
    return outcome, by, opt_text(body, "comment")


def parse_cancel(body: dict[str, Any]) -> tuple[str, str | None]:
    _unknown(body, {"by", "reason"})
    return text(body, "by", required=False, default="api") or "api", opt_text(body, "reason")


def parse_resend(body: dict[str, Any]) -> tuple[str, str]:
    """`POST /v1/approvals/{id}/cards/resend`: (channel, by)."""
    _unknown(body, {"channel", "by"})
    return text(body, "channel"), text(body, "by", required=False, default="api")


def parse_token_decision(body: dict[str, Any]) -> tuple[str, Outcome, str | None]:
    _unknown(body, {"token", "outcome", "comment"})
    token = text(body, "token", max_len=2000)
    return token, parse_outcome(body), opt_text(body, "comment")
