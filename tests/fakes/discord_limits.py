"""What Discord refuses in a message, an interaction's answer and a modal, as Discord refuses it:
400 with code 50035 "Invalid Form Body" and the path of the first offending field.

Limits (Discord's API reference, "Message", "Embed Limits", "Component", "Interaction
Response"): content 2000; at most 10 embeds, title 256, description 4096, 25 fields (name 256,
value 1024, neither empty), footer 2048, 6000 characters over an embed's texts; at most 5 action
rows of 1-5 buttons, a button's label 80 and `custom_id` 1-100, unique in the message; a modal's
title 1-45, 1-5 rows of exactly one text input (label 1-45, `custom_id` 1-100, value 4000).
"""

from __future__ import annotations

from typing import Any

RESPONSE_TYPES = frozenset({1, 4, 5, 6, 7, 9})


def _len(value: Any) -> int:
    return len(value) if isinstance(value, str) else 0


def _bad_text(value: Any, low: int, high: int) -> bool:
    return not isinstance(value, str) or not low <= len(value) <= high


def embed_error(e: Any, where: str) -> str | None:
    if not isinstance(e, dict):
        return f"{where}: not an object"
    if _len(e.get("title")) > 256:
        return f"{where}.title: must be 256 or fewer in length"
    if _len(e.get("description")) > 4096:
        return f"{where}.description: must be 4096 or fewer in length"
    fields = e.get("fields") or []
    if len(fields) > 25:
        return f"{where}.fields: must be 25 or fewer in length"
    total = _len(e.get("title")) + _len(e.get("description"))
    for i, f in enumerate(fields):
        if _bad_text(f.get("name"), 1, 256):
            return f"{where}.fields.{i}.name: must be between 1 and 256 in length"
        if _bad_text(f.get("value"), 1, 1024):
            return f"{where}.fields.{i}.value: must be between 1 and 1024 in length"
        total += len(f["name"]) + len(f["value"])
    footer = (e.get("footer") or {}).get("text")
    if _len(footer) > 2048:
        return f"{where}.footer.text: must be 2048 or fewer in length"
    total += _len(footer) + _len((e.get("author") or {}).get("name"))
    if total > 6000:
        return f"{where}: embed size exceeds maximum size of 6000"
    return None


def components_error(rows: Any) -> str | None:
    if not isinstance(rows, list) or len(rows) > 5:
        return "components: must be 5 or fewer in length"
    seen: set[str] = set()
    for r, row in enumerate(rows):
        items = row.get("components") if isinstance(row, dict) and row.get("type") == 1 else None
        if not isinstance(items, list) or not 1 <= len(items) <= 5:
            return f"components.{r}: an action row holds 1-5 buttons"
        for b, item in enumerate(items):
            where = f"components.{r}.components.{b}"
            if not isinstance(item, dict) or item.get("type") != 2 or item.get("style") not in (1, 2, 3, 4, 5):
                return f"{where}: not a button"
            if _len(item.get("label")) > 80:
                return f"{where}.label: must be 80 or fewer in length"
            if item.get("style") != 5:
                custom_id = item.get("custom_id")
                if _bad_text(custom_id, 1, 100):
                    return f"{where}.custom_id: must be between 1 and 100 in length"
                if custom_id in seen:
                    return f"{where}.custom_id: component custom id cannot be duplicated"
                seen.add(custom_id)
    return None


def message_error(body: Any, *, partial: bool = False) -> str | None:
    """Why Discord refuses this message body (a PATCH may leave fields out), or None."""
    if not isinstance(body, dict):
        return "body: not an object"
    if _len(body.get("content")) > 2000:
        return "content: must be 2000 or fewer in length"
    embeds = body.get("embeds") or []
    if len(embeds) > 10:
        return "embeds: must be 10 or fewer in length"
    for i, e in enumerate(embeds):
        if error := embed_error(e, f"embeds.{i}"):
            return error
    if "components" in body and (error := components_error(body["components"])):
        return error
    if not partial and not (body.get("content") or embeds or body.get("components")):
        return "Cannot send an empty message"
    return None


def modal_error(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "data: not an object"
    if _bad_text(data.get("custom_id"), 1, 100):
        return "data.custom_id: must be between 1 and 100 in length"
    if _bad_text(data.get("title"), 1, 45):
        return "data.title: must be between 1 and 45 in length"
    rows = data.get("components")
    if not isinstance(rows, list) or not 1 <= len(rows) <= 5:
        return "data.components: must be between 1 and 5 in length"
    for r, row in enumerate(rows):
        items = row.get("components") if isinstance(row, dict) and row.get("type") == 1 else None
        if not isinstance(items, list) or len(items) != 1:
            return f"data.components.{r}: a modal's row holds one text input"
        item = items[0]
        where = f"data.components.{r}.components.0"
        if item.get("type") != 4 or item.get("style") not in (1, 2):
            return f"{where}: not a text input"
        if _bad_text(item.get("custom_id"), 1, 100):
            return f"{where}.custom_id: must be between 1 and 100 in length"
        if _bad_text(item.get("label"), 1, 45):
            return f"{where}.label: must be between 1 and 45 in length"
        if _len(item.get("value")) > 4000:
            return f"{where}.value: must be 4000 or fewer in length"
    return None


def response_error(answer: Any, interaction_type: int) -> str | None:
    """Why Discord shows "This interaction failed" for this answer, or None."""
    if not isinstance(answer, dict) or answer.get("type") not in RESPONSE_TYPES:
        return "type: not an interaction callback type"
    kind, data = answer["type"], answer.get("data")
    if interaction_type == 1:
        return None if kind == 1 else "a PING is answered with a PONG"
    if kind == 1:
        return "a PONG answers only a PING"
    if kind == 9:
        return "a modal submit cannot open a modal" if interaction_type == 5 else modal_error(data)
    if kind in (4, 7):
        return message_error(data, partial=kind == 7)
    return None
