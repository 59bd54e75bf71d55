"""`hitl-gateway init [--path FILE]`: a commented, production-shaped config with fresh secrets."""

from __future__ import annotations

import argparse
import importlib.util
import os
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any

from gateway.cli.common import program
from gateway.delivery.registry import installed
from gateway.settings import DEFAULT_PATH, Settings, webpush

TEMPLATE = """\
# hitl-gateway configuration, written by `hitl-gateway init`. Every key can be overridden by an
# environment variable HITL_<SECTION>_<KEY> (README "Configuration"). This file holds secrets:
# keep it mode 0600 and out of version control.

[server]
host = "127.0.0.1"
port = 8080
# public_url = "https://approvals.example.com"   # links and webhooks; default: http://host:port
# shutdown_timeout = "10s"

[store]
url = "sqlite:///./var/hitl-gateway.db"          # or "postgresql://user@host:5432/db" (replicas)

[security]
secret_keys = ["{secret}"]   # signs tokens and seals raw args; add a new one last to rotate
# inline_policies = "restrict"                   # what an agent's inline policy may do (docs/policies.md)

[security.agents]            # agents' bearer keys: they suspend, and see only their own approvals
my-agent = "{agent_key}"

[security.operators]         # people's tools: decide, cancel, retry and re-post through the API
me = "{operator_key}"

[web]                        # the web inbox: `hitl-gateway web login-link alice` signs alice in
approvers = ["alice"]
# viewers = ["bob"]

{channels}
{webpush}
[policies.default]           # when a suspend names no policy
timeout = "30m"
on_timeout = "reject"

# [workers.invoice]          # what resumes a run once it is decided (docs/worker-sdk.md);
# command = ["{{python}}", "-m", "examples.invoice_agent.agent", "resume"]   # {{python}}: this interpreter
# timeout = "5m"
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("init", help="write a commented hitl-gateway.toml with fresh secrets (never overwrites)")
    p.add_argument("--path", help=f"where to write it (default: --config, else ./{DEFAULT_PATH})")
    p.set_defaults(handler=run, needs_config=False)


def render() -> str:
    """The file, with fresh secrets and each installed channel's sample section (commented out)."""
    samples = [spec.sample.replace("{secret}", secrets.token_urlsafe(24)) for spec in installed().values()]
    return TEMPLATE.format(
        secret=secrets.token_urlsafe(32),
        agent_key="agent_" + secrets.token_urlsafe(24),
        operator_key="op_" + secrets.token_urlsafe(24),
        channels="\n".join(sample for sample in samples if sample),  # format() leaves values as they are
        webpush=webpush.sample(importlib.util.find_spec("pywebpush") is not None),
    )


async def run(args: argparse.Namespace, settings: Settings | None) -> int:
    path = Path(args.path or getattr(args, "config", None) or DEFAULT_PATH)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never over an existing file
    except FileExistsError:
        print(f"hitl-gateway: {path} exists; init never overwrites a config (use --path)", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"hitl-gateway: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return 2
    with os.fdopen(fd, "w") as fh:
        fh.write(render())
    flag = "" if path == Path(DEFAULT_PATH) else f" --config {shlex.quote(str(path))}"
    print(f"wrote {path} (mode 0600): a secret key, an agent key (my-agent) and an operator key (me). Next:")
    print(f"  {program()}{flag} check-config")
    print(f"  {program()}{flag} serve")
    return 0
