"""CEL conditions on Google's C++ runtime (`cel-expr-python`, the extra `rules`), type-checked at start.

CEL has no loops, no recursion and no assignment: a condition ends in time bounded by its size
and its input's. The runtime exposes no cost limit, so the bounds are ours, checked at compile:
a condition is at most MAX_WHEN characters and may not nest one comprehension (`all`, `exists`,
`exists_one`, `map`, `filter`) inside another, so its cost stays linear in the suspend body
(itself bounded by `server.max_body_bytes`). `spent()` and `count()` take literal strings, so
the rule set knows every counter it reads before it runs (`RuleSet.counters`).

The optional library is imported only when a rule set is compiled, so the gateway starts
without it while no `[[rule]]` is configured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from gateway.core.durations import parse_duration
from gateway.core.errors import ConfigError
from gateway.core.rules.model import CounterKey, Counters

MAX_WHEN = 4096
MASK_BITS = 62  # conditions per bitmask program: CEL's int is 64-bit signed
EXTRA_HINT = "rules need the extra `rules`: pip install ./sdk '.[rules]' from the checkout"
FACTS = ("agent", "run_id", "step", "args", "context", "now", "hour", "weekday")
_MACRO = re.compile(r"\.\s*(all|exists_one|exists|map|filter)\s*\(")
_CALL = re.compile(r"\b(spent|count)\s*\(")
_SPENT = re.compile(r"""\bspent\s*\(\s*(["'])([^"'\\]*)\1\s*,\s*(["'])([^"'\\]*)\3\s*\)""")
_COUNT = re.compile(r"""\bcount\s*\(\s*(["'])([^"'\\]*)\1\s*\)""")
_STRING = re.compile(r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*\"""")
# The counters of the evaluation under way: the functions are bound once, in the environment,
# and read the numbers of the current call (a context variable is per task and per thread).
_COUNTERS: ContextVar[Counters] = ContextVar("hitl_rule_counters")


class EvalError(Exception):
    """A condition that could not be evaluated on these facts."""


def _library() -> Any:
    try:
        from cel_expr_python import cel
    except ImportError:
        raise ConfigError("rules", EXTRA_HINT) from None
    return cel


class CelEnv:
    """One type-checking environment: the facts' types and the budget functions."""

    def __init__(self) -> None:
        cel = self._cel = _library()
        t = cel.Type
        dyn_map = t.Map(t.STRING, t.DYN)
        types = {"agent": t.STRING, "run_id": t.STRING, "step": t.STRING, "args": dyn_map, "context": dyn_map}
        types |= {"now": t.TIMESTAMP, "hour": t.INT, "weekday": t.INT}
        functions = [
            # DYN: an int budget stays an int, so `spent("amount", "24h") + args.amount` adds
            # (CEL never mixes int and double in arithmetic)
            cel.FunctionDecl("spent", [cel.Overload("spent_string_string", t.DYN, [t.STRING, t.STRING], impl=_spent)]),
            cel.FunctionDecl("count", [cel.Overload("count_string", t.INT, [t.STRING], impl=_count)]),
        ]
        self._env = cel.NewEnv(variables=types, functions=functions)
        self._bool = t.BOOL
        self._dyn = t.DYN

    def compile(self, text: str) -> tuple[Any, frozenset[CounterKey]]:
        """The checked program and the counters it reads; ValueError with a one-line reason."""
        if len(text) > MAX_WHEN:
            raise ValueError(f"longer than {MAX_WHEN} characters")
        if not text.strip():
            raise ValueError("empty condition")
        _check_nesting(text)
        counters = _counter_keys(text)
        try:
            program = self._env.compile(text)
        except RuntimeError as exc:
            raise ValueError(_first_line(exc)) from None
        kind = program.return_type()
        if kind != self._bool and kind != self._dyn:
            raise ValueError(f"must be a true/false condition, not {kind.name()}")
        return program, counters

    def compile_masks(self, texts: Sequence[str]) -> tuple[Any, ...]:
        """The conditions (each compiled and checked alone first) as few programs, each the
        bitmask of MASK_BITS of them: one call into the runtime instead of one per rule (about
        2 us each), so a hundred rules cost 40 us and not 500. The sum is a balanced tree,
        because CEL bounds how deep an expression nests."""
        programs = []
        for start in range(0, len(texts), MASK_BITS):
            terms = [f"(({text}) ? {1 << i} : 0)" for i, text in enumerate(texts[start : start + MASK_BITS])]
            programs.append(self._env.compile(_balanced(terms)))
        return tuple(programs)

    def run_masks(self, programs: Sequence[Any], activation: Any, counters: Counters) -> list[bool] | None:
        """Which conditions hold, in order; None if any of them failed (a missing field, a type
        mismatch), so that the caller evaluates rule by rule and sees which, and where."""
        if not programs:
            return None
        token = _COUNTERS.set(counters)
        try:
            masks = [program.eval(activation).value() for program in programs]
        except Exception:  # the runtime raises for some errors: rule by rule says which
            return None
        finally:
            _COUNTERS.reset(token)
        out: list[bool] = []
        for mask in masks:
            if not isinstance(mask, int) or isinstance(mask, bool):  # an error value
                return None
            out.extend(bool(mask >> i & 1) for i in range(MASK_BITS))
        return out

    def activation(self, facts: Mapping[str, Any]) -> Any:
        return self._env.Activation(data=dict(facts))

    def run(self, program: Any, activation: Any, counters: Counters) -> bool:
        token = _COUNTERS.set(counters)
        try:
            value = program.eval(activation)
        except Exception as exc:  # the runtime raises for some errors (a Python value it cannot convert)
            raise EvalError(_first_line(exc)) from None
        finally:
            _COUNTERS.reset(token)
        if value.type() != self._bool:  # an error value (no such key, no overload) or not a bool
            raw = value.value()
            raise EvalError(_first_line(raw) if isinstance(raw, str) else f"not a bool: {value.type().name()}")
        return bool(value.value())


def _spent(field: str, window: str) -> int | float:
    return _COUNTERS.get().spent(field, _duration(window))


def _count(window: str) -> int:
    return _COUNTERS.get().count(_duration(window))


@lru_cache(maxsize=256)  # the windows are literals of the rules: a handful, parsed once
def _duration(text: str) -> timedelta:
    return parse_duration(text)


def _counter_keys(text: str) -> frozenset[CounterKey]:
    calls = len(_CALL.findall(_STRING.sub('""', text)))
    spent = [(m.group(2), m.group(4)) for m in _SPENT.finditer(text)]
    count = [m.group(2) for m in _COUNT.finditer(text)]
    if calls != len(spent) + len(count):
        raise ValueError('spent() and count() take literal strings, like spent("amount", "24h") or count("1h")')
    keys = [CounterKey(f, _window(w)) for f, w in spent] + [CounterKey(None, _window(w)) for w in count]
    return frozenset(keys)


def _window(text: str) -> Any:
    try:
        window = parse_duration(text)
    except ValueError as exc:
        raise ValueError(f"window {text!r}: {exc}") from None
    if not window:
        raise ValueError(f"window {text!r} is empty")
    return window


def _check_nesting(text: str) -> None:
    """No comprehension inside another: each is linear in its list, a nested pair quadratic."""
    bare = _STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)
    starts = [m.end() - 1 for m in _MACRO.finditer(bare)]
    for start in starts:
        end = _closing(bare, start)
        if any(start < other < end for other in starts):
            raise ValueError("a comprehension (all, exists, map, filter) may not contain another")


def _closing(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return len(text)


def _balanced(terms: Sequence[str]) -> str:
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return f"({_balanced(terms[:half])} + {_balanced(terms[half:])})"


def _first_line(error: object) -> str:
    """The CEL message without its status prefix and caret drawing: one line for a log or a CLI."""
    line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    line = re.sub(r"^[A-Z_]+: (ERROR: <input>:)?", "", line).replace(" (in container '')", "")
    return re.sub(r"^(\d+):(\d+): (.*)$", r"\3 (line \1, column \2)", line.strip())


def activation_facts(
    agent: str, run_id: str, step: str, args: Mapping[str, Any], context: Mapping[str, Any], local: datetime
) -> dict[str, Any]:
    """The variables of a condition. `local` is now in rules.timezone; CEL's own
    `getDayOfWeek()` numbering (0 = Sunday) is kept for `weekday`."""
    return {
        "agent": f"agent:{agent}",
        "run_id": run_id,
        "step": step,
        "args": dict(args),
        "context": dict(context),
        "now": local,
        "hour": local.hour,
        "weekday": (local.weekday() + 1) % 7,
    }


__all__ = ["EXTRA_HINT", "FACTS", "MAX_WHEN", "CelEnv", "EvalError", "activation_facts"]
