"""Text extraction: each supported type from a sample file, HTML boilerplate removal, corrupt
input as ExtractionError, and how an upload's media type is resolved."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.extract import (
    HTML,
    MARKDOWN,
    PDF,
    PLAIN,
    ExtractionError,
    UnsupportedMedia,
    extract_text,
    media_type_of,
    normalize_text,
    text_check,
)
from tests.retrieval.pdfs import make_pdf

FILES = Path(__file__).parent / "files"


# --- media types -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "declared", "expected"),
    [
        ("report.pdf", "application/octet-stream", PDF),
        ("REPORT.PDF", None, PDF),
        ("notes.md", "", MARKDOWN),
        ("notes.markdown", "binary/octet-stream", MARKDOWN),
        ("C:\\docs\\page.htm", None, HTML),
        ("page.html", "application/octet-stream", HTML),
        ("readme.txt", None, PLAIN),
        (None, "text/plain", PLAIN),
        ("readme.txt", "text/html; charset=utf-8", HTML),
        ("notes.txt", "text/x-markdown", MARKDOWN),
        (None, "Application/PDF", PDF),
    ],
)
def test_media_type_resolves_declared_type_else_extension(
    filename: str | None, declared: str | None, expected: str
) -> None:
    assert media_type_of(filename, declared) == expected


@pytest.mark.parametrize(
    ("filename", "declared", "refused"),
    [
        ("photo.png", "image/png", "image/png"),
        ("report.pdf", "image/png", "image/png"),
        ("archive.zip", "application/octet-stream", "application/octet-stream"),
        ("Makefile", None, "application/octet-stream"),
        (".md", None, "application/octet-stream"),
        (None, None, "application/octet-stream"),
    ],
)
def test_unsupported_media_names_the_type(
    filename: str | None, declared: str | None, refused: str
) -> None:
    with pytest.raises(UnsupportedMedia) as caught:
        media_type_of(filename, declared)
    assert caught.value.media_type == refused
    assert str(caught.value) == refused


def test_extract_refuses_an_unsupported_type() -> None:
    with pytest.raises(UnsupportedMedia):
        extract_text(b"\x89PNG\r\n", "image/png")


# --- plain text --------------------------------------------------------------------------


def test_plain_text_with_windows_newlines_and_bom_is_normalised() -> None:
    data = (FILES / "windows.txt").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\r\n" in data

    assert extract_text(data, PLAIN) == (
        "Meeting notes\n\n"
        "Attendees: Zoë, Renée and Jürgen.\n"
        "The budget is €1,200.50 per quarter.\n\n"
        "Next meeting: Monday."
    )


def test_utf16_with_bom_is_decoded() -> None:
    data = "Grüße aus Köln\r\n".encode("utf-16")
    assert extract_text(data, PLAIN) == "Grüße aus Köln"


@pytest.mark.parametrize(
    "data",
    [b"caf\xe9 au lait", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"],
    ids=["latin1-bytes", "binary"],
)
def test_text_that_is_not_utf8_is_an_extraction_error(data: bytes) -> None:
    with pytest.raises(ExtractionError):
        extract_text(data, PLAIN)


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (b"caf\xe9 au lait", PLAIN),
        (b"# caf\xe9", MARKDOWN),
        (b"<p>caf\xe9</p>", HTML),
        (b"text\x00\x01", PLAIN),
    ],
    ids=["plain", "markdown", "html", "binary"],
)
def test_text_check_refuses_what_extraction_would(data: bytes, media_type: str) -> None:
    with pytest.raises(ExtractionError) as checked:
        text_check(data, media_type)
    with pytest.raises(ExtractionError) as extracted:
        extract_text(data, media_type)
    assert str(checked.value) == str(extracted.value)


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        ("Grüße".encode("utf-16"), PLAIN),
        ('<meta charset="iso-8859-1"><p>Crème</p>'.encode("latin-1"), HTML),
        (b"%PDF-1.7 not really", PDF),  # a PDF is read when it is ingested
    ],
    ids=["utf-16-bom", "html-charset", "pdf"],
)
def test_text_check_passes_what_it_need_not_extract(data: bytes, media_type: str) -> None:
    text_check(data, media_type)


def test_normalisation_keeps_paragraphs_and_collapses_spaces() -> None:
    raw = "  Ti\ufb01le\u00a0 de\tmots \r\nline two\rline three\n\n\n\n\u00adpara\u200b two  \n"
    assert normalize_text(raw) == "Tifile de mots\nline two\nline three\n\npara two"


def test_normalisation_composes_accents() -> None:
    assert normalize_text("Rene\u0301e") == "Renée"


# --- Markdown ----------------------------------------------------------------------------


def test_markdown_keeps_text_and_drops_markup() -> None:
    text = extract_text((FILES / "notes.md").read_bytes(), MARKDOWN)

    assert text == (
        "Release notes\n\n"
        "Version 2.1 adds hybrid search and fixes the upload bug.\n"
        "See docs/search.md for details.\n\n"
        "Upgrading\n\n"
        "1. Back up the database.\n"
        "2. Run make migrate.\n\n"
        "Bullet one\n"
        "Bullet two with inline HTML\n\n"
        'Quoted: "search is faster now".\n\n'
        "def answer():\n"
        "return 42\n\n"
        "Setting | Default\n"
        "limit | 50\n\n"
        "Architecture diagram"
    )


def test_markdown_code_fence_is_kept_as_text() -> None:
    text = extract_text(b"Run:\n\n```\nSELECT *\nFROM t;  -- all\n```\n", MARKDOWN)
    assert text == "Run:\n\nSELECT *\nFROM t; -- all"


# --- HTML --------------------------------------------------------------------------------


def test_html_keeps_the_article() -> None:
    text = extract_text((FILES / "article.html").read_bytes(), HTML)

    assert text.startswith("Configuring retention policies\n\n")
    assert (
        "Retention policies decide how long the archive keeps each record before it is "
        "deleted. An administrator sets a default period of seven years; folders may "
        "override it."
    ) in text
    assert "\n\nSteps\n\nOpen the Policies page.\nChoose a period, e.g. 30 days.\n\n" in text
    assert "whatever the policy says.\nHolds are listed on the Holds page." in text
    assert "Record type | Default period\nInvoice | 10 years" in text
    assert text.endswith("retention --days 30 --folder /finance")


@pytest.mark.parametrize(
    "boilerplate",
    [
        "Acme Docs",  # <title> and the logo
        "Products catalogue",  # nav
        "Sign in",
        "Related articles",  # aside
        "Legal holds in depth",
        "cookies",  # a cookie banner that is only a <div>
        "Acme Corp",  # footer
        "Privacy policy",
        "dataLayer",  # scripts
        "trackPageView",
        "font-family",  # style
    ],
)
def test_html_drops_boilerplate(boilerplate: str) -> None:
    text = extract_text((FILES / "article.html").read_bytes(), HTML)
    assert boilerplate not in text


def test_html_without_main_keeps_its_headings() -> None:
    page = (
        b"<html><body><nav><a href='/'>Home</a></nav><h1>FAQ</h1>"
        b"<p>Reset your password from Settings.</p><h2>Billing</h2><p>Call 555-0100.</p>"
        b"<footer>Copyright Acme</footer></body></html>"
    )
    assert extract_text(page, HTML) == (
        "FAQ\n\nReset your password from Settings.\n\nBilling\n\nCall 555-0100."
    )


def test_html_that_looks_all_boilerplate_still_gives_its_text() -> None:
    page = b"<html><body><div class='comments'><p>Only comments here.</p></div></body></html>"
    assert extract_text(page, HTML) == "Only comments here."


def test_html_fragment_and_entities() -> None:
    assert extract_text(b"<p>Caf&eacute; &amp; cr&egrave;me</p>", HTML) == "Café & crème"


def test_html_in_a_declared_legacy_charset_is_decoded() -> None:
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>Crème brûlée.</p></body></html>'
    assert extract_text(page.encode("latin-1"), HTML) == "Crème brûlée."


def test_xhtml_with_an_xml_declaration() -> None:
    page = (
        b"<?xml version='1.0' encoding='utf-8'?>"
        b"<html xmlns='http://www.w3.org/1999/xhtml'><body><p>XHTML text.</p></body></html>"
    )
    assert extract_text(page, HTML) == "XHTML text."


@pytest.mark.parametrize("page", [b"", b"  \n", b"<html><body><script>x()</script></body></html>"])
def test_html_without_text_is_empty(page: bytes) -> None:
    assert extract_text(page, HTML) == ""


# --- PDF ---------------------------------------------------------------------------------


def test_pdf_pages_are_joined_by_a_blank_line() -> None:
    pdf = make_pdf(
        [
            ["Quarterly report (draft)", "Revenue grew by 12.5% in Q3."],
            ["Café costs fell; see appendix B."],
        ]
    )

    assert extract_text(pdf, PDF) == (
        "Quarterly report (draft)\nRevenue grew by 12.5% in Q3.\n\nCafé costs fell; see appendix B."
    )


@pytest.mark.parametrize(
    "data",
    [
        b"this is not a PDF",
        b"",
        b"%PDF-1.7\n" + bytes(range(256)) * 8,
        make_pdf([["A page that will be cut short."]])[:200],
    ],
    ids=["not-pdf", "empty", "garbage", "truncated"],
)
def test_corrupt_pdf_is_an_extraction_error(data: bytes) -> None:
    with pytest.raises(ExtractionError, match="unreadable PDF"):
        extract_text(data, PDF)
