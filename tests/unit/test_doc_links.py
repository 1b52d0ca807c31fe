"""Every relative link of README.md and docs/*.md names a file that exists and, with an anchor, a
heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.test_readme import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_CODE = re.compile(r"^```.*?^```", flags=re.S | re.M)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for title in re.findall(r"^#{1,6} (.+?)\s*$", _CODE.sub("", path.read_text()), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _relative_links(path: Path) -> list[str]:
    text = _CODE.sub("", path.read_text())
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in _relative_links(doc):
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    assert not broken, f"{doc.name} has broken links: {broken}"


def test_readme_links_every_detail_section() -> None:
    """The short table's rows link the detailed sections: every feature section of docs/features.md
    is linked from README (a section added there without a README row fails)."""
    readme = (REPO / "README.md").read_text()
    features = (REPO / "docs" / "features.md").read_text()
    section = features.split("\n## Features\n", 1)[1].split("\n## ", 1)[0]
    titles = re.findall(r"^### (.+)$", section, flags=re.M)
    assert len(titles) >= 28
    for title in titles:
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        assert f"](docs/features.md#{slug})" in readme, title
