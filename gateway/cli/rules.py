"""`hitl-gateway rules check|test FILE|report`: the configured rules, listed, tried without
suspending, and judged against what happened.

Loading the settings compiles the rules, so a bad condition has already stopped the command with
one line naming the rule (exit 2) by the time these run. `rules test` reads the agent's budgets
from the store when the rules use any and the store is there (a SQLite file that exists, a
PostgreSQL that answers); otherwise, or with `--no-store`, it reads them as 0 and says so.
`rules report` reads the events through the application layer (gateway.service.ruleops).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.cli.common import with_runtime
from gateway.core.durations import parse_duration
from gateway.core.errors import ConfigError, GatewayError, ValidationError
from gateway.core.rules import NO_COUNTERS, Facts, RuleEngine, RuleResult, RuleSet, evaluate, facts_from_body
from gateway.service.ruleops import store_missing
from gateway.service.rulereport import RuleReport
from gateway.settings import Settings


def add_parser(sub: Any) -> None:
    rules = sub.add_parser("rules", help="the rules that decide when a person is needed")
    actions = rules.add_subparsers(dest="action", required=True)
    actions.add_parser("check", help="compile the configured rules and list them")
    test = actions.add_parser("test", help="evaluate a suspend body plus 'agent' (a JSON file, - for stdin)")
    test.add_argument("file", help='a JSON suspend body with "agent": NAME')
    test.add_argument("--json", action="store_true", dest="as_json", help="print the result as JSON")
    test.add_argument("--no-store", action="store_true", help="read the budgets as 0 (do not open the store)")
    report = actions.add_parser("report", help="per rule: what it decided or would have, against what people did")
    report.add_argument("--since", default="7d", help="a duration before now (default 7d)")
    report.add_argument("--json", action="store_true", dest="as_json", help="print the report as JSON")
    rules.set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "check":
        return check(settings.rules)
    if args.action == "report":
        return await report(settings, args.since, as_json=args.as_json)
    return await test(settings, args.file, as_json=args.as_json, no_store=args.no_store)


def check(ruleset: RuleSet) -> int:
    print(f"engine {ruleset.engine}, default {ruleset.default}, timezone {ruleset.timezone}")
    print(f"rules_hash {ruleset.hash}")
    if ruleset.engine is RuleEngine.CEDAR:
        print("Cedar policies: " + ("compiled" if ruleset.cedar.strip() else "none (every suspend asks)"))
        return 0
    if not ruleset.rules:
        print(f"no [[rule]]: every suspend gets the default ({ruleset.default})")
    for i, rule in enumerate(ruleset.rules, 1):
        scope = f" agents={','.join(rule.agents)}" if rule.agents else ""
        mode = " (shadow)" if rule.mode == "shadow" else ""
        print(f"{i}. {rule.name}: {rule.then}{mode}{scope}")
        print(f"   when {rule.when}")
    print(f"ok: {len(ruleset.rules)} rule(s) compiled")
    return 0


async def test(settings: Settings, file: str, *, as_json: bool = False, no_store: bool = False) -> int:
    facts = facts_from_body(_read_body(file))
    result, note = await _dry_run(settings, facts, datetime.now(UTC), no_store)
    if as_json:
        print(json.dumps(result.as_dict() | {"budgets": note}, indent=2, sort_keys=True))
    else:
        _print(result)
        print(f"budgets: {note}")
    return 0


def _read_body(file: str) -> Any:
    try:
        text = Path("/dev/stdin" if file == "-" else file).read_text()
    except OSError as exc:
        raise ValidationError(file, exc.strerror or "cannot be read") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(file, f"not JSON: {exc}") from None


async def _dry_run(settings: Settings, facts: Facts, now: datetime, no_store: bool) -> tuple[RuleResult, str]:
    """The rules' answer, and where the budgets came from."""
    ruleset = settings.rules
    if not ruleset.counters:
        return evaluate(ruleset, facts, NO_COUNTERS, now), "none used"
    why = "--no-store" if no_store else store_missing(settings.store.url)
    if why is None:
        out: list[RuleResult] = []

        async def read(rt: Any) -> int:
            out.append(await rt.rule_ops.evaluate(facts, now))
            return 0

        try:
            await with_runtime(settings, read)
            return out[0], "read from the store"
        except (GatewayError, OSError) as exc:  # a PostgreSQL that does not answer, a locked file
            why = f"the store is not reachable ({type(exc).__name__}: {exc})"
    return evaluate(ruleset, facts, NO_COUNTERS, now), f"read as 0: {why}"


async def report(settings: Settings, since: str, *, as_json: bool = False) -> int:
    try:
        start = datetime.now(UTC) - parse_duration(since)
    except ValueError:
        raise ConfigError("--since", f"{since!r} is not a duration (7d, 24h, 90m)") from None
    out: list[RuleReport] = []

    async def read(rt: Any) -> int:
        out.append(await rt.rule_ops.report(start))
        return 0

    await with_runtime(settings, read)
    made = out[0]
    if as_json:
        print(json.dumps(made.as_dict() | {"since": start.isoformat()}, indent=2, sort_keys=True))
        return 0
    hashes = len(made.rules_hashes)
    print(f"since {start.isoformat(timespec='seconds')}: {made.suspends} suspend(s) through the rules", end="")
    print(f" ({hashes} rule sets: the rules changed in the window)" if hashes > 1 else "")
    for line in made.lines:
        print(line.text())
    return 0


def _print(result: RuleResult) -> None:
    print(f"outcome: {result.outcome}")
    print(f"rule: {result.rule or '(default)'}")
    if result.reason:
        print(f"reason: {result.reason}")
    routing = {"policy": result.policy, "channels": ",".join(result.channels), "approvers": ",".join(result.approvers)}
    for key, value in routing.items():
        if value:
            print(f"{key}: {value}")
    for hit in result.shadow:
        print(f"shadow: {hit.rule} would {hit.outcome}" + (f" ({hit.reason})" if hit.reason else ""))
    for error in result.errors:
        print(f"error: {error.rule}: {error.message}")
    print(f"rules_hash: {result.rules_hash}")


__all__ = ["add_parser", "check", "report", "run", "test"]
