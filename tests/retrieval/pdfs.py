"""PDFs built byte by byte for the tests and benchmarks of reading documents: a minimal
valid one of given lines, and the bomb of issue 25 (pages sharing one Flate stream that
decompresses to MiBs). No Django: bench/extraction_bounds.py imports them as they are."""

from __future__ import annotations

import zlib

FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def pdf_of(objects: list[bytes]) -> bytes:
    """A PDF file of `objects`, numbered from 1 in order (object 1 the catalog), with its
    cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: one Helvetica (WinAnsi) line per string, one page per list."""

    def literal(line: str) -> bytes:
        raw = line.encode("cp1252")
        return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"

    font = 3 + 2 * len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
    ]
    for i, lines in enumerate(pages):
        stream = b"BT /F1 12 Tf 72 720 Td 16 TL %s ET" % b" ".join(
            literal(line) + b" Tj T*" for line in lines
        )
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font, 4 + 2 * i)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(FONT)
    return pdf_of(objects)


def shared_stream_pdf(pages: int, content: bytes) -> bytes:
    """A PDF of `pages` pages that all draw one Flate stream holding `content`: the shape
    of the issue's 7,852-byte file (three pages, one 2 MiB stream)."""
    packed = zlib.compress(content, 9)
    kids = " ".join(f"{5 + n} 0 R" for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        FONT,
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(packed), packed),
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    ] * pages
    return pdf_of(objects)


def padded(size: int) -> bytes:
    """Page content of `size` bytes that is cheap to parse: one line of text, then blanks."""
    text = b"BT /F1 12 Tf 72 720 Td (The quarterly report is attached.) Tj ET\n"
    return text + b" " * (size - len(text))


def drawn_text(size: int) -> bytes:
    """Page content of about `size` bytes that is costly to read: a line of text per 48."""
    line = b"(All work and no play makes a dull bomb.) Tj T*\n"
    return b"BT /F1 12 Tf 14 TL 72 720 Td\n" + line * (size // len(line)) + b"ET\n"
