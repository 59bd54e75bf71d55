"""One root error with stable codes; `gateway.http.middleware` maps them to JSON bodies.

A class's docstring is its default message. Codes are part of the public API: clients match on
`error.code`, never on the message.
"""

from __future__ import annotations

from typing import Any, ClassVar


class GatewayError(Exception):
    """Internal gateway error."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or (self.__doc__ or self.code).strip()
        self.details = details
        super().__init__(self.message)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"error": body}


class ConfigError(GatewayError):
    """Invalid configuration."""

    code = "config_error"

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"config: {key}: {problem}")


class BadRequest(GatewayError):
    """The request is malformed."""

    code = "bad_request"
    status = 400


class InvalidJSON(BadRequest):
    """The request body is not valid JSON."""

    code = "invalid_json"


class ValidationError(BadRequest):
    """A field is missing or invalid."""

    code = "validation_error"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}", field=field)
        self.field = field


class UnknownChannel(BadRequest):
    """The channel is unknown or not enabled."""

    code = "unknown_channel"


class DestinationNotAllowed(BadRequest):
    """The channel's target is not a destination the operator opened to this agent."""

    code = "destination_not_allowed"


class UnknownWorker(BadRequest):
    """The worker is not configured."""

    code = "unknown_worker"


class UnknownPolicy(BadRequest):
    """The policy is not configured."""

    code = "unknown_policy"


class Unauthorized(GatewayError):
    """Missing or invalid credentials."""

    code = "unauthorized"
    status = 401


class InvalidToken(Unauthorized):
    """The token is invalid or has been tampered with."""

    code = "invalid_token"


class Forbidden(GatewayError):
    """You may not do this."""

    code = "forbidden"
    status = 403


class PolicyNotAllowed(Forbidden):
    """The policy asks for something this caller may not choose (security.inline_policies)."""

    code = "policy_not_allowed"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}", field=field)
        self.field = field


class OperatorRequired(Forbidden):
    """This needs an operator key (security.operators)."""

    code = "operator_required"


class NotAnApprover(Forbidden):
    """This user is not allowed to decide this approval."""

    code = "not_an_approver"


class RequesterCannotDecide(Forbidden):
    """The requester of an approval cannot decide it."""

    code = "requester_cannot_decide"


class NotFound(GatewayError):
    """Not found."""

    code = "not_found"
    status = 404


class MethodNotAllowed(GatewayError):
    """Method not allowed."""

    code = "method_not_allowed"
    status = 405


class Conflict(GatewayError):
    """The request conflicts with the current state."""

    code = "conflict"
    status = 409


class CheckpointsDeleted(Conflict):
    """The newest audit checkpoint in the database is older than one this gateway wrote."""

    code = "audit_checkpoints_deleted"

    def __init__(self, found: str, wrote: str) -> None:
        super().__init__(
            f"the newest audit checkpoint in the database is {found}, but this gateway wrote checkpoint {wrote}:"
            " checkpoints were deleted; not sealing over them (check with `audit verify --anchor`)"
        )


class AlreadyDecided(Conflict):
    """The approval has already been decided."""

    code = "already_decided"


class StaleRound(Conflict):
    """An approve on args that are no longer the current round's (gateway.core.rounds.tag):
    another approver changed them after the card, page or form was drawn. Nothing is recorded."""

    code = "stale_round"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}", field=field)


class ExtendedMeanwhile(Conflict):
    """An extension asked for from a page that showed fewer extensions than there are now (a
    second click, a page open twice, another approver first): nothing is extended."""

    code = "extended_meanwhile"

    def __init__(self, seen: int, now: int) -> None:
        super().__init__(
            f"extensions: the deadline was extended meanwhile ({now} extension(s) now, {seen} when this page"
            " was drawn); nothing was changed: look at the new deadline",
            field="extensions",
        )


class AmbiguousRun(Conflict):
    """Several agents use this run id: name one."""

    code = "ambiguous_run"

    def __init__(self, run_id: str, namespaces: list[str]) -> None:
        shown = ", ".join(n or "no agent" for n in namespaces)
        super().__init__(
            f"agent: run {run_id!r} is used by {shown}; name one with ?agent=NAME (empty: no agent)",
            field="agent",
            agents=namespaces,
        )


class IdempotencyConflict(Conflict):
    """The idempotency key was used for a different request."""

    code = "idempotency_conflict"


class TokenExpired(GatewayError):
    """The token has expired."""

    code = "token_expired"
    status = 410


class RawPruned(GatewayError):
    """Retention removed the approval's raw args and state: nothing can resume it with them."""

    code = "raw_pruned"
    status = 410

    def __init__(self, approval_id: str) -> None:
        super().__init__(
            f"approval {approval_id}: its raw args and state were removed by retention ([retention] raw_after);"
            " the redacted args are not the ones to run"
        )


class RequestTimeout(GatewayError):
    """The request body did not arrive in time (server.body_timeout)."""

    code = "request_timeout"
    status = 408


class PayloadTooLarge(GatewayError):
    """The request body is too large."""

    code = "payload_too_large"
    status = 413


class UnsupportedMediaType(GatewayError):
    """The request body must be JSON."""

    code = "unsupported_media_type"
    status = 415


class StoreUnavailable(GatewayError):
    """The store is not available."""

    code = "store_unavailable"
    status = 503


class StoredDataUnreadable(GatewayError):
    """A stored value is not one the gateway writes: the database was changed outside it."""

    code = "stored_data_unreadable"
    status = 500


class StoreInUse(GatewayError):
    """Another live `serve` holds the SQLite file (one serving process per file)."""

    code = "store_in_use"
    status = 409
