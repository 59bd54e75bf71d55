"""Schemathesis hooks for `make fuzz` (loaded through SCHEMATHESIS_HOOKS=bench.fuzz_hooks)."""

from __future__ import annotations

from typing import Any

import schemathesis

# The JSON API's routes. The web inbox's browser pages (/, /login, /approvals/...) answer a
# browser with an HTML error page by design, so the JSON error-body contract is not theirs.
JSON_PREFIXES = ("/v1/", "/webhooks/", "/healthz", "/readyz", "/openapi.json")


@schemathesis.check
def error_body(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx of the JSON API carries the JSON error body {"error": {"code", "message"}}."""
    path = str(getattr(case, "path", None) or case.operation.path)
    if not 400 <= response.status_code < 500 or not path.startswith(JSON_PREFIXES):
        return None
    try:
        data = response.json()
    except Exception as exc:
        raise AssertionError(f"{response.status_code} without a JSON body: {response.text[:200]!r}") from exc
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("code"), str) or not isinstance(err.get("message"), str):
        raise AssertionError(f"{response.status_code} body is not {{'error': {{'code', 'message'}}}}: {data!r}")
    return True
