"""`hitl-gateway rules check|test FILE`: the configured rules, listed and tried without suspending.

Loading the settings compiles the rules, so a bad condition has already stopped the command with
one line naming the rule (exit 2) by the time these run. `rules test` reads the counters as 0:
it has no store (`rules report` and the store-backed counters come with the suspend wiring).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.core.errors import ValidationError
from gateway.core.rules import NO_COUNTERS, RuleEngine, RuleResult, RuleSet, evaluate, facts_from_body
from gateway.settings import Settings


def add_parser(sub: Any) -> None:
    rules = sub.add_parser("rules", help="the rules that decide when a person is needed")
    actions = rules.add_subparsers(dest="action", required=True)
    actions.add_parser("check", help="compile the configured rules and list them")
    test = actions.add_parser("test", help="evaluate a suspend body plus 'agent' (a JSON file, - for stdin)")
    test.add_argument("file", help='a JSON suspend body with "agent": NAME')
    test.add_argument("--json", action="store_true", dest="as_json", help="print the result as JSON")
    rules.set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "check":
        return check(settings.rules)
    return test(settings.rules, args.file, as_json=args.as_json)


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


def test(ruleset: RuleSet, file: str, *, as_json: bool = False) -> int:
    try:
        text = Path("/dev/stdin" if file == "-" else file).read_text()
    except OSError as exc:
        raise ValidationError(file, exc.strerror or "cannot be read") from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(file, f"not JSON: {exc}") from None
    result = evaluate(ruleset, facts_from_body(body), NO_COUNTERS, datetime.now(UTC))
    if as_json:
        print(json.dumps(result.as_dict(), indent=2, sort_keys=True))
    else:
        _print(result)
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


__all__ = ["add_parser", "check", "run", "test"]
