"""The Block Kit limits Slack enforces on a message, as the fake Slack answers them.

Documented limits (docs.slack.dev, "Block Kit" reference): 50 blocks a message; header text 150;
section text 3000, 10 fields of 2000; context 10 elements; actions 25 elements; button text 75,
action_id 255, value 2000, style primary|danger; confirm title 100, text 300, buttons 30;
block_id 255; message `text` 40,000 (`msg_too_long`). Undocumented but observed: about 12,000
characters of text across all blocks gives `msg_blocks_too_long`. A block over its limit is
`invalid_blocks`, as Slack answers it.
"""

from __future__ import annotations

from typing import Any

TEXT_MAX = 40_000
BLOCKS_MAX = 50
BLOCKS_TEXT_MAX = 12_000
BLOCK_TYPES = frozenset({"header", "section", "context", "actions", "divider", "image", "input", "rich_text"})
VIEW_TITLE_MAX = 24
VIEW_BLOCKS_MAX = 100
METADATA_MAX = 3000


def _text(obj: Any) -> str:
    return obj.get("text", "") if isinstance(obj, dict) and isinstance(obj.get("text"), str) else ""


def _all_text(value: Any) -> int:
    """Characters of every `text` string in a block, however deep."""
    if isinstance(value, dict):
        return sum(len(v) if k == "text" and isinstance(v, str) else _all_text(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_all_text(v) for v in value)
    return 0


def _confirm_ok(confirm: Any) -> bool:
    if confirm is None:
        return True
    return (
        len(_text(confirm.get("title"))) <= 100
        and len(_text(confirm.get("text"))) <= 300
        and len(_text(confirm.get("confirm"))) <= 30
        and len(_text(confirm.get("deny"))) <= 30
    )


def _element_ok(e: Any) -> bool:
    if not isinstance(e, dict):
        return False
    if e.get("type") != "button":
        return True
    return (
        1 <= len(_text(e.get("text"))) <= 75
        and len(str(e.get("action_id", ""))) <= 255
        and len(str(e.get("value", ""))) <= 2000
        and e.get("style") in (None, "primary", "danger")
        and _confirm_ok(e.get("confirm"))
    )


def _block_ok(b: Any) -> bool:
    if not isinstance(b, dict) or b.get("type") not in BLOCK_TYPES or len(str(b.get("block_id", ""))) > 255:
        return False
    kind = b["type"]
    if kind == "header":
        return 1 <= len(_text(b.get("text"))) <= 150
    if kind == "section":
        fields = b.get("fields") or []
        if "text" not in b and not fields:
            return False
        return (
            len(_text(b.get("text"))) <= 3000 and len(fields) <= 10 and all(1 <= len(_text(f)) <= 2000 for f in fields)
        )
    if kind == "context":
        elements = b.get("elements") or []
        return 1 <= len(elements) <= 10 and all(len(_text(e)) <= 3000 for e in elements)
    if kind == "actions":
        elements = b.get("elements") or []
        return 1 <= len(elements) <= 25 and all(_element_ok(e) for e in elements)
    return True


def message_error(body: dict[str, Any]) -> str | None:
    """Slack's error for a `chat.postMessage` / `chat.update` body, or None if Slack takes it."""
    if len(str(body.get("text") or "")) > TEXT_MAX:
        return "msg_too_long"
    blocks = body.get("blocks")
    if blocks is None:
        return None
    if not isinstance(blocks, list) or len(blocks) > BLOCKS_MAX or not all(_block_ok(b) for b in blocks):
        return "invalid_blocks"
    if _all_text(blocks) > BLOCKS_TEXT_MAX:
        return "msg_blocks_too_long"
    return None


def view_error(view: Any) -> str | None:
    """Slack's error for the `view` of `views.open`, or None."""
    if not isinstance(view, dict):
        return "invalid_arguments"
    blocks = view.get("blocks") or []
    if (
        len(_text(view.get("title"))) > VIEW_TITLE_MAX
        or len(str(view.get("private_metadata", ""))) > METADATA_MAX
        or len(blocks) > VIEW_BLOCKS_MAX
    ):
        return "invalid_arguments"
    return None
