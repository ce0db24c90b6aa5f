"""The design documents in docs/ are what code comments cite (`docs/api.md#errors`): every
cited anchor, and every link between the documents and from the README, names a heading
that exists, so a renamed section cannot leave citations pointing nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
DOCS = ROOT / "docs"
SOURCES = ("agentbuilder", "agents", "guardrails", "retrieval", "tests", "bench")
# `docs/api.md#errors`, and the anchors a citation lists after it: `docs/api.md#errors,
# #invocation` names two sections of api.md.
CITATION = re.compile(
    r"docs/(?P<doc>[a-z_]+\.md)#(?P<anchor>[a-z0-9-]+)" r"(?P<more>(?:,\s*#[a-z0-9-]+)*)"
)
MARKDOWN_LINK = re.compile(r"\]\((?P<doc>[a-z_/]*\.md)?#(?P<anchor>[a-z0-9-]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    return {
        slug(line.lstrip("#"))
        for line in doc.read_text().splitlines()
        if re.match(r"#{1,6} ", line)
    }


def cited() -> list[tuple[str, str, str]]:
    """(where, document, anchor) of every citation of docs/ in the source tree."""
    found = []
    for package in SOURCES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            for match in CITATION.finditer(text):
                where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
                names = [match["anchor"], *re.findall(r"#([a-z0-9-]+)", match["more"])]
                found += [(where, match["doc"], name) for name in names]
    return found


def test_slug_follows_github() -> None:
    assert slug("Example: A2A message/send") == "example-a2a-messagesend"
    assert slug("Differences from the seed spec") == "differences-from-the-seed-spec"


def test_the_documents_exist() -> None:
    assert (DOCS / "architecture.md").is_file()
    assert (DOCS / "api.md").is_file()
    readme = (ROOT / "README.md").read_text()
    assert "(docs/architecture.md)" in readme
    assert "(docs/api.md)" in readme


@pytest.mark.parametrize("doc", ["architecture.md", "api.md"])
def test_links_between_documents_resolve(doc: str) -> None:
    text = (DOCS / doc).read_text()
    broken = [
        f"{match['doc'] or doc}#{match['anchor']}"
        for match in MARKDOWN_LINK.finditer(text)
        if match["anchor"] not in anchors(DOCS / (match["doc"] or doc))
    ]
    assert not broken, f"{doc} links to sections that do not exist: {broken}"


def test_citations_in_code_resolve() -> None:
    sections = {doc.name: anchors(doc) for doc in DOCS.glob("*.md")}
    broken = [
        f"{where}: docs/{doc}#{anchor}"
        for where, doc, anchor in cited()
        if anchor not in sections.get(doc, set())
    ]
    assert not broken, "citations of sections that do not exist:\n" + "\n".join(broken)
