"""A refusal in the words of the command that got it: `--to: ...` rather than the API's field
`delegate: ...`, the same whether the store (ValidationError) or a server (400) refused."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from gateway.cli.remote import ServerRefused
from gateway.core.errors import ValidationError

T = TypeVar("T")


async def named(options: Mapping[str, str], call: Callable[[], Awaitable[T]]) -> T:
    """`call`, its refusal naming the command's option (`options`: API field -> option)."""
    try:
        return await call()
    except ValidationError as exc:
        raise ValidationError(options.get(exc.field, exc.field), _problem(exc.message)) from None
    except ServerRefused as exc:
        if exc.code != "validation_error":
            raise
        field, sep, problem = exc.message.partition(": ")
        if not sep or field not in options:
            raise
        raise ServerRefused(exc.status, exc.code, f"{options[field]}: {problem}") from None


def _problem(message: str) -> str:
    return message.partition(": ")[2] or message


__all__ = ["named"]
