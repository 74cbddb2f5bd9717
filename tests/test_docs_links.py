"""The front page and the guides point only at what is there: every relative link resolves to a file of the
repository and every `#anchor` to a heading of its target, and the README links every guide in docs/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    # GitHub's heading anchors: lowercase, punctuation dropped (hyphens and underscores kept), spaces to hyphens.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    return [m for m in LINK.findall(text) if not m.startswith(("http://", "https://", "mailto:"))]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves_to_a_file_and_a_heading(page):
    for link in _links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} points at a file that is not there"
        assert ROOT in target.parents or target == ROOT, f"{page.name}: {link} points outside the repository"
        if anchor:
            assert target.suffix == ".md" and anchor in _anchors(target), f"{page.name}: no heading for {link}"


def test_the_front_page_links_every_guide():
    readme_links = {link.partition("#")[0] for link in _links(ROOT / "README.md")}
    guides = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert guides <= readme_links, sorted(guides - readme_links)
