"""Every SQL statement the stores run, by name, in one placeholder style.

- `queries.sql`: the statements both backends run, written once;
- `sqlite.sql` and `postgres.sql`: only what really differs per dialect (claims: one writer
  against `FOR UPDATE SKIP LOCKED`; PostgreSQL's `UPDATE ... FROM unnest`, `RETURNING` and
  NOTIFY; SQLite's multi-row inserts and `IN` lists).

A statement starts at a `-- name: NAME` line; the comment lines after it say why. Placeholders
are `$1`, `$2`... (PostgreSQL's own); for SQLite they become `?1`, `?2`..., its numbered form,
so a reused `$1` binds the same argument on both backends and every call passes one tuple.
In `sqlite.sql`, `{ids}` stands for a list of `?` marks filled at run time (`in_list`).

`queries("sqlite").claim_due` is the text; a name defined twice, or used but not defined,
fails at import (tests/store/test_sql_files.py also checks that every name is used).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any, Literal

from gateway.core.models import Status

__all__ = ["Dialect", "Queries", "approvals_sql", "in_list", "multi_row", "parse", "queries", "to_dialect"]

Dialect = Literal["sqlite", "postgres"]
DIALECTS: tuple[Dialect, ...] = ("sqlite", "postgres")
_NAME = re.compile(r"^-- name: *(\w+) *$", re.M)
_MARK = re.compile(r"\$(\d+)")
_VALUES = re.compile(r"^(.*?\bVALUES\s*)(\(.*?\))(.*)$", re.S | re.I)
_NUMBERED = re.compile(r"\?(\d+)")


def parse(text: str, source: str = "<sql>") -> dict[str, str]:
    """The named statements of a file: {name: SQL text}, comments kept (they say why)."""
    parts = _NAME.split(text)
    out: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in out:
            raise ValueError(f"{source}: the query {name!r} is defined twice")
        lines = body.strip().splitlines()
        while lines and lines[0].lstrip().startswith("--"):
            lines.pop(0)  # the why, for the reader of the file; the database gets the statement
        while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
            lines.pop()  # a section rule or blank line before the next name
        sql = "\n".join(lines).rstrip().rstrip(";").rstrip()
        if not sql:
            raise ValueError(f"{source}: the query {name!r} is empty")
        out[name] = sql
    return out


def to_dialect(sql: str, dialect: Dialect) -> str:
    """A `$n` statement in the dialect's placeholder style (SQLite: `?n`, same numbers)."""
    return _MARK.sub(r"?\1", sql) if dialect == "sqlite" else sql


class Queries:
    """The statements one backend runs, as attributes: `Q.get_approval`.

    Plain instance attributes (one dict lookup on the hot paths); a missing name raises
    AttributeError naming the files to look in."""

    def __init__(self, dialect: Dialect, statements: Mapping[str, str]) -> None:
        if reserved := {"dialect", "names"} & set(statements):
            raise ValueError(f"a query may not be named {sorted(reserved)}")
        self.dialect = dialect
        self.names = frozenset(statements)
        self.__dict__.update(statements)

    def __getattr__(self, name: str) -> str:
        raise AttributeError(f"no query {name!r} in gateway/store/sql/queries.sql or {self.dialect}.sql")

    def __getitem__(self, name: str) -> str:
        return str(getattr(self, name))


def _read(filename: str) -> str:
    return (resources.files(__package__) / filename).read_text(encoding="utf-8")


@functools.cache
def queries(dialect: Dialect) -> Queries:
    """The shared statements in the dialect's style, plus its own file's; no name in both."""
    shared = parse(_read("queries.sql"), "queries.sql")
    own = parse(_read(f"{dialect}.sql"), f"{dialect}.sql")
    if clash := sorted(set(shared) & set(own)):
        raise ValueError(f"{dialect}.sql redefines {clash} of queries.sql: write a statement once")
    return Queries(dialect, {name: to_dialect(sql, dialect) for name, sql in {**shared, **own}.items()})


@functools.lru_cache(maxsize=64)
def in_list(sql: str, count: int) -> str:
    """`sql` with its `{ids}` replaced by `count` plain `?` marks (SQLite numbers each one after
    the highest numbered mark before it)."""
    return sql.replace("{ids}", ",".join("?" * count))


@functools.cache
def multi_row(sql: str) -> tuple[str, str, str]:
    """A one-row SQLite `INSERT ... VALUES (?1, ?2, ...) [tail]` as (head, row, tail), for a
    multi-row insert: the row's marks become plain `?`, so that `head + row, row, ... + tail`
    takes each row's values in turn. The row must number its marks 1, 2, ... once each, in order."""
    match = _VALUES.match(sql)
    if match is None:
        raise ValueError(f"not a one-row INSERT ... VALUES: {sql[:60]}")
    head, row, tail = match.groups()
    numbers = [int(n) for n in _NUMBERED.findall(row)]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"a multi-row INSERT needs its marks once each, in order: {row}")
    return head, _NUMBERED.sub("?", row), tail


SEARCHED = ("title", "summary", "run_id", "step", "agent")  # the columns an inbox search looks in


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def approvals_sql(
    dialect: Dialect,
    status: Status | None,
    run_id: str | None,
    channel: str | None,
    order: Literal["newest", "oldest"],
    *,
    offset: bool = False,
    agent: str | None = None,
    search: str | None = None,
) -> tuple[str, list[Any]]:
    """`SELECT * FROM approvals` with the inbox/API filters, its ORDER BY, and `LIMIT` (and
    `OFFSET`) as its last marks: the one statement composed of parts, because a filter left out
    keeps the index plan simple (a `$1 IS NULL OR ...` form would not).

    `channel` matches an approval whose `channels` JSON list holds the address, or any address
    of that kind when it has no target (a kind alone); `agent` keeps only the approvals that
    principal created; `search` keeps those whose title, summary, run id, step or agent holds
    it, case-insensitively (ASCII on SQLite), its LIKE wildcards taken literally."""
    where: list[str] = []
    params: list[Any] = []

    def mark(value: Any) -> str:
        params.append(value)
        return f"${len(params)}"

    if channel:
        exact = '%"' + _like_escape(channel) + '"%'
        if ":" in channel:
            where.append(f"channels LIKE {mark(exact)} ESCAPE '\\'")
        else:
            kind = '%"' + _like_escape(channel) + ":%"
            where.append(f"(channels LIKE {mark(exact)} ESCAPE '\\' OR channels LIKE {mark(kind)} ESCAPE '\\')")
    if status is not None:
        where.append(f"status = {mark(status.value)}")
    if run_id is not None:
        where.append(f"run_id = {mark(run_id)}")
    if agent is not None:
        where.append(f"agent = {mark(agent)}")
    if search:
        like = mark("%" + _like_escape(search.lower()) + "%")
        held = (f"LOWER(COALESCE({c}, '')) LIKE {like} ESCAPE '\\'" for c in SEARCHED)
        where.append("(" + " OR ".join(held) + ")")
    sql = "SELECT * FROM approvals" + (" WHERE " + " AND ".join(where) if where else "")
    sql += " ORDER BY created_at DESC, id" if order == "newest" else " ORDER BY created_at, id"
    n = len(params)
    sql += f" LIMIT ${n + 1}" + (f" OFFSET ${n + 2}" if offset else "")
    return to_dialect(sql, dialect), params
