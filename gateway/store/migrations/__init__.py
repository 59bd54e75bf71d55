"""The schema's versions, one `.sql` file each: `NNNN_slug.sql` for both dialects, or a
`NNNN_slug.sqlite.sql` and `NNNN_slug.postgres.sql` pair where the dialects differ. The first
line names it (`-- migration: ...`, stored in schema_migrations.name).

Append only: never edit a released migration, add the next version instead. Numbers are
assigned ahead of time on branches, so the runners apply every version not applied yet, not
only those above the highest (sqlite/migrate.py, postgres/migrate.py).
tests/store/test_schema.py compares a fresh install with the migrated schema on both backends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

__all__ = ["LATEST", "MIGRATIONS", "Migration", "load"]

_FILE = re.compile(r"^(\d{4})_(\w+?)(?:\.(sqlite|postgres))?\.sql$")
_HEADER = re.compile(r"^-- migration: *(.+?) *$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sqlite: str
    postgres: str


def load() -> tuple[Migration, ...]:
    """Every migration in this package, in version order; a version needs both dialects."""
    found: dict[int, dict[str, tuple[str, str]]] = {}
    for entry in resources.files(__package__).iterdir():
        match = _FILE.match(entry.name)
        if match is None:
            continue
        text = entry.read_text(encoding="utf-8")
        header = _HEADER.match(text.split("\n", 1)[0])
        if header is None:
            raise ValueError(f"{entry.name}: the first line must be '-- migration: <name>'")
        version, dialect = int(match[1]), match[3]
        for d in (dialect,) if dialect else ("sqlite", "postgres"):
            if d in found.setdefault(version, {}):
                raise ValueError(f"migration {version} has two {d} files")
            found[version][d] = (header[1], text)
    out = []
    for version, by_dialect in sorted(found.items()):
        if set(by_dialect) != {"sqlite", "postgres"}:
            raise ValueError(f"migration {version} lacks a {({'sqlite', 'postgres'} - set(by_dialect)).pop()} file")
        names = {name for name, _ in by_dialect.values()}
        if len(names) != 1:
            raise ValueError(f"migration {version}: its dialect files have different names {sorted(names)}")
        out.append(Migration(version, names.pop(), by_dialect["sqlite"][1], by_dialect["postgres"][1]))
    return tuple(out)


MIGRATIONS = load()
LATEST = MIGRATIONS[-1].version
