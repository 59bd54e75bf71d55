"""Rules benchmark (not a test): the cost of compiling and evaluating CEL rules, per rule.

    python -m bench.rules_bench              # 1 and 100 rules
    python -m bench.rules_bench --json
    python -m bench.rules_bench --toml 100 > /tmp/rules100.toml   # for bench.ab --rules, bench.rules_http

Each rule set is N rules like the issue's (`step == "charge" && args.currency == "EUR" &&
args.amount < K`), none of which matches, so every evaluation runs all N conditions (the worst
case of first-match) and then the default; plus one set with a budget rule (`spent()`), which
calls back into Python. Reports µs per evaluation and µs per rule.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.core.rules import CounterKey, CounterSnapshot, Facts, Rule, RuleOutcome, compile_rules, evaluate

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
FACTS = Facts("billing", "charge", "r1", {"amount": 10**9, "currency": "EUR", "customer": "acme"})


def rules(n: int, budget: bool = False) -> list[Rule]:
    when = 'step == "charge" && args.currency == "EUR" && args.amount < {k}'
    if budget:
        when = 'step == "charge" && spent("amount", "24h") + args.amount < {k}'
    return [Rule(f"r{i}", when.format(k=1000 + i), RuleOutcome.ALLOW) for i in range(n)]


def toml(n: int) -> str:
    """`n` [[rule]] tables that bench a's suspend body (bench.load.suspend_body: a charge of 4200,
    customer cus_123) runs through in full, every condition evaluated to its last term, without a
    match: the cost of 100 rules on a suspend that still asks a person."""
    out = []
    for i in range(n):
        when = f'step == "charge" && args.customer == "cus_123" && args.amount > {1_000_000 + i}'
        out.append(f'[[rule]]\nname = "r{i}"\nwhen = \'{when}\'\nthen = "allow"\n')
    return "\n".join(out)


def measure(n: int, budget: bool = False, rounds: int = 3) -> dict[str, Any]:
    t = time.perf_counter()
    ruleset = compile_rules(rules(n, budget), timezone="Europe/Madrid")
    compile_us = (time.perf_counter() - t) * 1e6
    counters = CounterSnapshot({CounterKey("amount", timedelta(hours=24)): 123})
    assert evaluate(ruleset, FACTS, counters, NOW).rule is None  # every rule ran
    count = max(200, 20000 // n)
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(count):
            evaluate(ruleset, FACTS, counters, NOW)
        best = min(best, (time.perf_counter() - t) / count * 1e6)
    return {
        "rules": n,
        "budget": budget,
        "compile_us_per_rule": round(compile_us / n, 1),
        "eval_us": round(best, 1),
        "eval_us_per_rule": round(best / n, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--toml", type=int, metavar="N", help="print N rules as TOML (bench.ab --rules) and exit")
    args = parser.parse_args()
    if args.toml is not None:
        print(toml(args.toml))
        return
    empty = compile_rules([])
    t = time.perf_counter()
    for _ in range(20000):
        evaluate(empty, FACTS, CounterSnapshot(), NOW)
    baseline = (time.perf_counter() - t) / 20000 * 1e6
    results = [measure(1), measure(100), measure(1, budget=True), measure(100, budget=True)]
    if args.json:
        print(json.dumps({"no_rules_us": round(baseline, 2), "results": results}, indent=2))
        return
    print(f"no rules configured: {baseline:.2f} µs per suspend")
    for r in results:
        kind = "budget (spent)" if r["budget"] else "plain"
        print(
            f"{r['rules']:>3} {kind:<14} rules: {r['eval_us']:>8.1f} µs per evaluation,"
            f" {r['eval_us_per_rule']:.2f} µs per rule; compile {r['compile_us_per_rule']:.0f} µs per rule"
        )


if __name__ == "__main__":
    main()
