"""What reading a document costs in CPU, before and after retrieval.bounded_extract: the
issue's bomb (three pages sharing one 2 MiB Flate stream, 7 KB on the wire) and a normal
20-page PDF, read in this process as before (extract_text + split, no bounds) and in a
bounded child process with the default settings' bounds.

    .venv/bin/python bench/extraction_bounds.py

CPU seconds are this process's (before) and its children's (after), from getrusage.
Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from retrieval.bounded_extract import Limits, extract_pieces  # noqa: E402
from retrieval.chunking import split  # noqa: E402
from retrieval.extract import PDF, ExtractionError, extract_text  # noqa: E402
from tests.retrieval.pdfs import drawn_text, make_pdf, shared_stream_pdf  # noqa: E402

DEFAULTS = Limits(64 * 2**20, 2000, 256, 32, 30.0, 2**30)


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def before(data: bytes) -> tuple[float, str]:
    start = cpu(resource.RUSAGE_SELF)
    pieces = split(extract_text(data, PDF), size=256, overlap=32)
    return cpu(resource.RUSAGE_SELF) - start, f"{len(pieces)} chunks"


def after(data: bytes) -> tuple[float, str]:
    start = cpu(resource.RUSAGE_CHILDREN)
    try:
        outcome = f"{len(extract_pieces(data, PDF, DEFAULTS))} chunks"
    except ExtractionError as exc:
        outcome = f"failed: {exc}"
    return cpu(resource.RUSAGE_CHILDREN) - start, outcome


def main() -> None:
    bomb = shared_stream_pdf(3, drawn_text(2 * 2**20))
    normal = make_pdf(
        [
            [f"Page {n}, line {m}: the handbook covers leave and travel." for m in range(40)]
            for n in range(20)
        ]
    )
    for name, data in (("bomb", bomb), ("normal 20-page PDF", normal)):
        wall = time.monotonic()
        old, old_outcome = before(data)
        new, new_outcome = after(data)
        print(f"{name} ({len(data)} bytes):")
        print(f"  before (in process): {old:.2f} s CPU, {old_outcome}")
        print(f"  after (bounded child): {new:.2f} s CPU, {new_outcome}")
        print(f"  ratio before/after: {old / new:.1f}x  ({time.monotonic() - wall:.0f} s wall)")


if __name__ == "__main__":
    main()
