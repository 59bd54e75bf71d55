"""The README is a landing page, the reference lives in docs/, and what a newcomer reads carries
no internal history: no document outside the repository, no numbered work rounds or tracker
issues. Every relative link in the README, the changelog and docs/ leads somewhere that exists,
down to the heading."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

import pytest

from tests.docs.readme import DOCS, README, ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
LICENSE = ROOT / "LICENSE"
# sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt, as Debian and PyPI projects ship it
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def documents() -> list[Path]:
    return [README, CHANGELOG, *sorted(DOCS.rglob("*.md"))]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def test_the_readme_is_a_landing_page() -> None:
    text = README.read_text()
    lines = text.count("\n")
    assert lines <= 300, f"README.md has {lines} lines: move reference material into docs/"
    first_screen = "\n".join(text.splitlines()[:40])
    assert "![" in first_screen and "docs/img/" in first_screen, "the first screen shows the product"
    assert "<!-- readme-test: sdk -->" in text, "the agent snippet is on the landing page"
    for heading in ("## Prerequisites", "## License", "## Documentation"):
        assert f"\n{heading}\n" in text, heading
    assert "](LICENSE)" in text and "](docs/README.md)" in text


def test_the_licence_is_the_apache_license_2_0_as_pyproject_says() -> None:
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "Apache-2.0"
    assert LICENSE.exists(), "pyproject declares Apache-2.0: the repository must carry its text"
    assert hashlib.sha256(LICENSE.read_bytes()).hexdigest() == APACHE_2_SHA256, "not the canonical text"


def test_there_is_a_changelog() -> None:
    assert CHANGELOG.exists()
    assert CHANGELOG.read_text().startswith("# Changelog\n")


# Internal history a reader cannot follow: a design document that is not in the repository, the
# project's numbered work rounds, tracker issues.
_HISTORY = re.compile(r"(?-i:\bDESIGN\b)|\bround [0-9]+|\bissues? #?[0-9]+|\bitem [0-9]+ of\b", re.I)


def history(path: Path) -> list[str]:
    return [
        f"{_name(path)}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _HISTORY.search(line)
    ]


def test_no_internal_history_in_what_a_reader_reads() -> None:
    found = [hit for path in documents() for hit in history(path)]
    assert not found, "internal history (move it to CHANGELOG.md in plain words):\n" + "\n".join(found)


def test_the_history_rule_catches_what_it_is_for(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See DESIGN.md.\nRound 1 let it.\nFixed in issue 15.\nissues #3 and 4.\nA design, round the corner.\n"
    )
    assert len(history(page)) == 4


# --- links -------------------------------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", path.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{_name(path)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{_name(path)}: {target} (no such heading in {dest.name})")
    return broken


def test_every_relative_link_leads_to_a_file_and_heading_that_exist() -> None:
    broken = [b for path in documents() for b in broken_links(path)]
    assert not broken, "broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Approve with changes: `args_schema` and `editable`", "approve-with-changes-args_schema-and-editable"),
        ("Exactly once, and when", "exactly-once-and-when"),
        ("`make demo`", "make-demo"),
        ("The store's SQL", "the-stores-sql"),
        ("Card deliveries (the outbox)", "card-deliveries-the-outbox"),
    ],
)
def test_slugs_are_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_broken_link_and_a_missing_heading_are_caught(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Some part\n\n[ok](#some-part) [x](b.md) [y](a.md#nowhere)\n")
    assert [b.split(": ", 1)[1] for b in broken_links(tmp_path / "a.md")] == [
        "b.md (no such file)",
        "a.md#nowhere (no such heading in a.md)",
    ]
