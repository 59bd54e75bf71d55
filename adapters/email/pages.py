"""Pure HTML of the confirmation flow: the page a link opens, and the answer to its form.

No script, inline styles only, every value escaped. The page shows what will be decided and
asks for a confirmation; only its POST decides (mail scanners fetch links, they do not submit).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from adapters.email.links import Link
from adapters.email.render import MAX_VALUE
from gateway.core import rounds
from gateway.core.models import Approval, Outcome
from gateway.plugin import argsform, shown_deadline

CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#222}"
    "button{font-size:1rem;padding:.5rem 1.2rem;margin-top:1rem}"
    "textarea{width:100%;min-height:5rem}code{background:#f3f3f3;padding:0 .2rem}"
)


def _page(title: str, body: str) -> str:
    esc = html.escape
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><meta name='robots' content='noindex'>"
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def confirm(
    approval: Approval,
    link: Link,
    action: str,
    csrf: str,
    *,
    error: str = "",
    submitted: Mapping[str, str] | None = None,
    error_field: str | None = None,
) -> str:
    """The approval, and a form that decides it as `link.addressee` when submitted: with the
    edit fields (gateway.http.web.argsform) on an Approve link when the suspend allows edits,
    and a reason field on a Reject link (required when the policy says so). A refused submit
    comes back with `error`, what was typed kept and the field it names marked."""
    esc = html.escape
    fields = argsform.fields(approval) if link.outcome is Outcome.APPROVE else []
    edit = (
        "<fieldset><legend>Arguments (change them before approving, if you need to)</legend>"
        + argsform.render(fields, submitted, error_field)
        + "</fieldset>"
        if fields
        else ""
    )
    alert = f"<p role='alert' style='color:#b00;font-weight:600'>{esc(error)}</p>" if error else ""
    change = rounds.change_text(approval)
    verb = "Approve" if link.outcome is Outcome.APPROVE else "Reject"
    rows = "".join(
        f"<li><b>{esc(str(k)[:80])}</b>: <code>{esc(str(v)[:MAX_VALUE])}</code></li>" for k, v in approval.args.items()
    )
    needed = "required" if approval.policy.require_reason else "optional"
    typed = esc((submitted or {}).get("reason", ""))
    reason = (
        f"<p><label>Why reject? ({needed})<br><textarea name='reason' maxlength='1000'>{typed}</textarea></label></p>"
        if link.outcome is Outcome.REJECT
        else ""
    )
    deadline = f"Deadline: {esc(shown_deadline(approval))}" if approval.deadline else "No deadline"
    body = (
        f"<h1>{verb} this step?</h1><h2>{esc(approval.title)}</h2>"
        + (f"<p>{esc(approval.summary)}</p>" if approval.summary else "")
        + f"<p>Run <code>{esc(approval.run_id)}</code> · step <code>{esc(approval.step)}</code> · {deadline}</p>"
        + (f"<ul>{rows}</ul>" if rows else "")
        + (f"<p><b>{esc(change[0].upper() + change[1:])}.</b></p>" if change else "")
        + f"<form method='post' action='{esc(action)}'><input type='hidden' name='csrf' value='{esc(csrf)}'>"
        + f"{alert}{edit}{reason}<p>You decide as <b>{esc(link.addressee)}</b>.</p>"
        + f"<button type='submit' name='confirm' value='yes'>{verb}</button></form>"
    )
    return _page(f"{verb}: {approval.title}", body)


def confirm_extend(approval: Approval, link: Link, action: str, csrf: str) -> str:
    """The page of an extend link: the deadline now, and a form that extends it by the link's duration."""
    esc = html.escape
    deadline = f"The deadline is {esc(shown_deadline(approval))}." if approval.deadline else "No deadline."
    body = (
        f"<h1>Extend the deadline by {esc(link.extend or '')}?</h1><h2>{esc(approval.title)}</h2><p>{deadline}</p>"
        f"<form method='post' action='{esc(action)}'><input type='hidden' name='csrf' value='{esc(csrf)}'>"
        f"<p>You extend it as <b>{esc(link.addressee)}</b>.</p>"
        f"<button type='submit' name='confirm' value='yes'>Extend by {esc(link.extend or '')}</button></form>"
    )
    return _page(f"Extend: {approval.title}", body)


def message(title: str, text: str) -> str:
    """A short answer page (the outcome of a confirmation, or why there is nothing to do)."""
    return _page(title, f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>")
