"""Plain text out of uploaded documents: text, Markdown, HTML (main content only) and PDF."""

from __future__ import annotations

import codecs
import functools
import io
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from retrieval.chunking import count_tokens

PLAIN = "text/plain"
MARKDOWN = "text/markdown"
HTML = "text/html"
PDF = "application/pdf"

SUPPORTED = frozenset({PLAIN, MARKDOWN, HTML, PDF})

BY_EXTENSION = {
    ".txt": PLAIN,
    ".text": PLAIN,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".pdf": PDF,
}

# Names clients send for what is really "type unknown"; the file name decides then.
GENERIC = frozenset({"application/octet-stream", "binary/octet-stream", "application/unknown"})
ALIASES = {"text/x-markdown": MARKDOWN, "application/xhtml+xml": HTML}


class UnsupportedMedia(Exception):
    def __init__(self, media_type: str) -> None:
        super().__init__(media_type)
        self.media_type = media_type


class ExtractionError(Exception):
    pass


class BoundExceeded(ExtractionError):
    """The document costs more to read than a bound allows (retrieval.bounded_extract)."""


@dataclass(frozen=True)
class Bounds:
    """What reading one document may cost, beyond the CPU time and memory its process is
    given: `decompressed_bytes` of PDF page content (a page's content counted each time a
    page draws it: pages sharing one stream each cost its length), and `tokens` of text
    (past `chunks` × `chunk_tokens` tokens the text makes more than `chunks` chunks,
    whatever the split)."""

    decompressed_bytes: int
    chunks: int
    chunk_tokens: int

    def check_tokens(self, tokens: int, where: str = "") -> None:
        if tokens > self.chunks * self.chunk_tokens:
            raise BoundExceeded(
                f"the document makes more than {self.chunks} chunks (DOCUMENT_MAX_CHUNKS){where}"
            )


def media_type_of(filename: str | None, declared: str | None) -> str:
    """The supported media type of an upload: the declared one unless it is generic, else the
    file extension's. Raises UnsupportedMedia."""
    base = (declared or "").split(";", 1)[0].strip().lower()
    base = ALIASES.get(base, base)
    if base and base not in GENERIC:
        if base in SUPPORTED:
            return base
        raise UnsupportedMedia(base)
    suffix = _suffix(filename or "")
    if suffix in BY_EXTENSION:
        return BY_EXTENSION[suffix]
    raise UnsupportedMedia(base or "application/octet-stream")


def extract_text(data: bytes, media_type: str, bounds: Bounds | None = None) -> str:
    """The normalised text of a document of a supported media type. Raises ExtractionError for
    corrupt or undecodable input, BoundExceeded past `bounds`, UnsupportedMedia for any
    other type."""
    extractor = _EXTRACTORS.get(media_type)
    if extractor is None:
        raise UnsupportedMedia(media_type)
    if media_type == PDF:
        return normalize_text(_pdf(data, bounds))
    return normalize_text(extractor(data))


def text_check(data: bytes, media_type: str) -> None:
    """Raise ExtractionError now for a text that extraction would refuse (an encoding it
    cannot decode, binary data): cheap, unlike extraction, so an upload form can say so at
    once. A PDF is read only when it is ingested."""
    if media_type == HTML:
        _decode(data, fallback=_meta_charset(data))
    elif media_type in (PLAIN, MARKDOWN):
        _decode(data)


_LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
)
_NEWLINES = re.compile(r"\r\n?|[\f\v\x85\u2028\u2029]")
# Soft hyphens and zero-width spaces come out of PDFs and split words for search.
_INVISIBLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\xad\u200b\ufeff]")
_SPACES = re.compile(r"[^\S\n]+")
_SPACE_AROUND_NEWLINE = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalize_text(text: str) -> str:
    """NFC, every newline convention as \\n, runs of spaces as one, at most one blank line."""
    text = unicodedata.normalize("NFC", text).translate(_LIGATURES)
    text = _NEWLINES.sub("\n", text)
    text = _INVISIBLE.sub("", text)
    text = _SPACES.sub(" ", text)
    text = _SPACE_AROUND_NEWLINE.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _suffix(filename: str) -> str:
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


# Only declared encodings are honoured (a BOM, an HTML meta charset): statistical guessing
# turned short cp1252 French into cp1250 mojibake in trials, and a clear error beats a
# silently garbled index.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _decode(data: bytes, fallback: str | None = None) -> str:
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            data, encoding = data[len(bom) :], name
            break
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        if fallback is None or encoding != "utf-8":
            raise ExtractionError(f"not valid {encoding} text: {exc.reason}") from exc
        try:
            text = data.decode(fallback)
        except UnicodeDecodeError as again:
            raise ExtractionError(f"not valid {fallback} text: {again.reason}") from again
    if "\x00" in text:
        raise ExtractionError("binary data, not text")
    return text


def _plain(data: bytes) -> str:
    return _decode(data)


def _markdown(data: bytes) -> str:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    source = _FRONT_MATTER.sub("", _decode(data), count=1)
    return "".join(_markdown_parts(parser.parse(source)))


# YAML front matter is metadata for a site generator, not part of the document.
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)


_MD_PARAGRAPH_ENDS = frozenset({
    "blockquote_close", "bullet_list_close", "heading_close", "hr", "ordered_list_close",
    "paragraph_close", "table_close",
})  # fmt: skip


def _markdown_parts(tokens: Iterable[Any]) -> Iterable[str]:
    """Block tokens as text: headings and paragraphs end in a blank line, list items and table
    rows in a newline; an ordered item keeps its number, a bullet item loses its bullet."""
    first_cell = True
    for token in tokens:
        kind = token.type
        if kind == "inline":
            yield from _inline_parts(token.children or [])
        elif kind in ("fence", "code_block"):
            yield token.content + "\n"
        elif kind == "html_block":
            yield _TAG.sub("", _HTML_COMMENT.sub("", token.content)) + "\n"
        elif kind == "list_item_open" and token.info:
            yield f"{token.info}{token.markup} "
        elif kind == "tr_open":
            first_cell = True
        elif kind in ("th_open", "td_open"):
            yield "" if first_cell else " | "
            first_cell = False
        elif kind == "tr_close" or (kind == "paragraph_close" and token.hidden):
            yield "\n"
        elif kind in _MD_PARAGRAPH_ENDS:
            yield "\n\n"


_TAG = re.compile(r"<[^>]*>")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _inline_parts(children: Iterable[Any]) -> Iterable[str]:
    for child in children:
        # An image's content is its alt text.
        if child.type in ("text", "code_inline", "image"):
            yield child.content
        elif child.type in ("softbreak", "hardbreak"):
            yield "\n"


_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)


def _html(data: bytes) -> str:
    source = _XML_DECLARATION.sub("", _decode(data, fallback=_meta_charset(data)))
    if not source.strip():
        return ""
    return _main_content(source) or _whole_page(source)


def _meta_charset(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:4096])
    if match is None:
        return None
    try:
        return codecs.lookup(match.group(1).decode("ascii")).name
    except LookupError:
        return None


def _parse_html(source: str) -> Any:
    import lxml.html
    from lxml.etree import ParserError

    try:
        return lxml.html.document_fromstring(source)
    except (ParserError, ValueError) as exc:
        raise ExtractionError(f"unreadable HTML: {exc}") from exc


@functools.cache
def _trafilatura_config() -> Any:
    from trafilatura.settings import use_config

    config = use_config()
    # Uploaded pages can be short (an FAQ, a memo); the default 250-character floor would
    # send them to the whole-page fallback.
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")
    return config


def _main_content(source: str) -> str:
    import trafilatura

    tree = _parse_html(source)
    _wrap_in_main(tree)
    document = trafilatura.bare_extraction(
        tree,
        include_comments=False,
        include_tables=True,
        include_formatting=False,
        include_links=False,
        include_images=False,
        with_metadata=False,
        config=_trafilatura_config(),
    )
    body = getattr(document, "body", None)
    return "" if body is None else _flatten(body, _TEI_LAYOUT).strip()


def _wrap_in_main(tree: Any) -> None:
    """Put a page without <main> or <article> inside <main>: without a content container
    trafilatura falls back to collecting bare paragraphs, and drops every heading."""
    import lxml.html

    if tree.body is None or tree.xpath("//main|//article|//*[@role='main']"):
        return
    main = lxml.html.Element("main")
    main.text, tree.body.text = tree.body.text, None
    main.extend(list(tree.body))
    tree.body.append(main)


@dataclass(frozen=True)
class _Layout:
    paragraphs: frozenset[str]
    lines: frozenset[str]
    cells: frozenset[str]
    breaks: frozenset[str]
    preformatted: frozenset[str]


# The XML trafilatura returns.
_TEI_LAYOUT = _Layout(
    paragraphs=frozenset({"ab", "code", "div", "head", "list", "p", "quote", "table"}),
    lines=frozenset({"item", "row"}),
    cells=frozenset({"cell"}),
    breaks=frozenset({"lb"}),
    preformatted=frozenset({"code"}),
)
_HTML_PARAGRAPHS = frozenset({
    "address", "article", "blockquote", "details", "div", "dl", "figcaption", "figure", "h1", "h2",
    "h3", "h4", "h5", "h6", "hr", "main", "ol", "p", "pre", "section", "summary", "table", "ul",
})  # fmt: skip
_HTML_LAYOUT = _Layout(
    paragraphs=_HTML_PARAGRAPHS,
    lines=frozenset({"dd", "dt", "li", "tr"}),
    cells=frozenset({"td", "th"}),
    breaks=frozenset({"br"}),
    preformatted=frozenset({"pre", "textarea"}),
)

# Used only when trafilatura finds nothing: drop the usual page furniture, keep the rest.
_BOILERPLATE = (
    "//head|//script|//style|//noscript|//template|//nav|//aside|//form|//iframe|//svg"
    "|//header[not(ancestor::article or ancestor::main)]"
    "|//footer[not(ancestor::article or ancestor::main)]"
    "|//*[@hidden or @role='navigation' or @role='banner' or @role='contentinfo'"
    " or @role='complementary' or @aria-hidden='true']"
)


def _whole_page(source: str) -> str:
    tree = _parse_html(source)
    for element in tree.xpath(_BOILERPLATE):
        element.drop_tree()
    main = tree.xpath("//main|//*[@role='main']")
    return _flatten(main[0] if main else tree, _HTML_LAYOUT)


_SEPARATORS = ("", " ", " | ", "\n", "\n\n")
_WHITESPACE = re.compile(r"\s+")


def _flatten(root: Any, layout: _Layout) -> str:
    """The text of an lxml tree laid out by `layout`. Outside preformatted blocks whitespace
    is a space, as a browser shows it; separators do not stack, so the end of one list item
    and the start of the next make one newline, not a blank line."""
    from lxml import etree

    parts: list[str] = []
    pending = ""
    preformatted = 0

    def separate(separator: str) -> None:
        nonlocal pending
        if parts and _SEPARATORS.index(separator) > _SEPARATORS.index(pending):
            pending = separator

    def put(text: str | None) -> None:
        nonlocal pending
        if not text:
            return
        core, lead, trail = text, False, False
        if not preformatted:
            collapsed = _WHITESPACE.sub(" ", text)
            core, lead, trail = collapsed.strip(), collapsed[0] == " ", collapsed[-1] == " "
        if lead:
            separate(" ")
        if core:
            parts.extend((pending, core))
            pending = ""
        if trail:
            separate(" ")

    for event, element in etree.iterwalk(root, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in layout.paragraphs:
            separate("\n\n")
        elif tag in layout.lines:
            separate("\n")
        if event == "start":
            preformatted += tag in layout.preformatted
            if tag in layout.breaks:
                separate("\n")
            elif tag in layout.cells and element.getprevious() is not None:
                separate(" | ")
            if tag:
                put(element.text)
        else:
            preformatted -= tag in layout.preformatted
            if element is not root:
                put(element.tail)
    return "".join(parts)


# pypdf's own per-stream output limits (75 MB each by default), lowered to the document's
# bound: no single stream inflates past it in memory before the count below sees it.
_PDF_OUTPUT_LIMITS = (
    "array_based_stream_maximum_output_length",
    "brotli_maximum_output_length",
    "jbig2_maximum_output_length",
    "lzw_maximum_output_length",
    "run_length_maximum_output_length",
    "zlib_maximum_output_length",
)


def _pdf(data: bytes, bounds: Bounds | None = None) -> str:
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError

    limits: dict[str, Any] = {}
    if bounds is not None:
        limits = {name: bounds.decompressed_bytes for name in _PDF_OUTPUT_LIMITS}
    pages: list[str] = []
    try:
        with apply_configuration(**limits):
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise ExtractionError("the PDF is password-protected")
            count = len(reader.pages)
            content = tokens = 0
            for number, page in enumerate(reader.pages, start=1):
                where = f": stopped at page {number} of {count}"
                if bounds is not None:
                    content += _content_length(page)
                    if content > bounds.decompressed_bytes:
                        raise BoundExceeded(_decompressed_reason(bounds, where))
                pages.append(page.extract_text())
                if bounds is not None:
                    tokens += count_tokens(pages[-1])
                    bounds.check_tokens(tokens, where)
    except ExtractionError:
        raise
    except LimitReachedError as exc:
        # One stream alone decompresses past the bound (or past another of pypdf's limits).
        reason = f"{exc}: stopped at page {len(pages) + 1}"
        raise BoundExceeded(
            _decompressed_reason(bounds, f" ({reason})") if bounds else reason
        ) from exc
    # A damaged file can fail anywhere in pypdf's object graph, not only with its own errors.
    except Exception as exc:
        raise ExtractionError(f"unreadable PDF: {exc}") from exc
    return "\n\n".join(pages)


def _content_length(page: Any) -> int:
    contents = page.get_contents()
    return 0 if contents is None else len(contents.get_data())


def _decompressed_reason(bounds: Bounds, where: str) -> str:
    return (
        f"the PDF's page content decompresses to more than {bounds.decompressed_bytes} bytes "
        f"(DOCUMENT_MAX_DECOMPRESSED_BYTES){where}"
    )


_EXTRACTORS: dict[str, Callable[[bytes], str]] = {
    PLAIN: _plain,
    MARKDOWN: _markdown,
    HTML: _html,
    PDF: _pdf,
}
