"""A one-time link's confirmation POST is a form anyone holding the link can write by hand. A body
that is not a form the gateway can read (bytes that are not the charset it names, a charset that
does not exist) or a value no store can hold (an unpaired UTF-16 surrogate, which UTF-7 decodes
to) is a 400 page that says so: never a 500, and the link stays unused, so the real confirmation
decides afterwards."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from gateway.core.models import Status
from tests.email.conftest import ALICE, Mail, inbox, mail, mail_settings  # noqa: F401  (the fixtures)
from tests.fakes.smtp import links_of
from tests.helpers import table_counts

_CSRF = re.compile(r"name='csrf' value='([^']+)'")


BOUNDARY = "hitl-test-boundary"


def _multipart(csrf: str, reason: bytes, charset: str) -> bytes:
    """multipart/form-data as a browser would write it, but for the charset of `reason`'s part."""
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{csrf}\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="reason"\r\n'
            f"Content-Type: text/plain; charset={charset}\r\n\r\n"
        ).encode()
        + reason
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


BODIES = {
    "invalid UTF-8": lambda csrf: _multipart(csrf, b"no \xed\xa0\x80 way", "utf-8"),
    "an unpaired surrogate (UTF-7)": lambda csrf: _multipart(csrf, b"no +2AA- way", "utf-7"),
    "an unknown charset": lambda csrf: _multipart(csrf, b"no way", "x-no-such-charset"),
}


@pytest.mark.parametrize("body", sorted(BODIES))
async def test_an_unreadable_confirmation_form_is_a_400_and_spends_no_link(mail: Mail, body: str) -> None:  # noqa: F811
    aid = await mail.suspend()
    await mail.rt.outbox.drain()
    reject = links_of(mail.inbox.to(ALICE)[0])["reject"]
    path = urlsplit(reject).path
    page = await mail.client.get(path)
    match = _CSRF.search(await page.text())
    assert page.status == 200 and match is not None
    before = await table_counts(mail.rt)
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    resp = await mail.client.post(path, data=BODIES[body](match.group(1)), headers=headers)
    assert resp.status == 400, await resp.text()
    assert "text/html" in resp.headers["Content-Type"]
    assert await table_counts(mail.rt) == before
    approval = await mail.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.WAITING
    # the link was not used: its real confirmation decides
    done = await mail.client.post(path, data={"csrf": match.group(1), "reason": "not today"})
    assert done.status == 200, await done.text()
    approval = await mail.rt.store.get_approval(aid)
    assert approval is not None and approval.status is Status.REJECTED
