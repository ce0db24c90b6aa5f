"""A document's text, split into chunks, read in a child process within bounds.

A PDF of 7,852 bytes (three pages sharing one 2 MiB Flate stream) took 164 s of CPU to
ingest into 3,647 chunks, in the server's own threads, and slowed every API call
meanwhile (issue 25). Reading a file is the one step whose cost an uploader chooses, so it
runs in a child process (this module run with `-m`) that:

- is limited by the kernel: RLIMIT_CPU (DOCUMENT_EXTRACTION_SECONDS of CPU, then SIGXCPU)
  and RLIMIT_AS (DOCUMENT_EXTRACTION_MEMORY_BYTES), and niced, so the server's requests
  come first when the CPU is contended; the parent also gives up on it after a wall
  deadline (WALL_FACTOR times its CPU allowance: a busy machine gives a niced process
  little of the CPU, and the deadline is a backstop for a child that stopped moving, not
  the bound on work);
- stops at DOCUMENT_MAX_DECOMPRESSED_BYTES of PDF page content and at more than
  DOCUMENT_MAX_CHUNKS chunks, page by page, before the rest is read
  (retrieval.extract.Bounds);
- holds nothing of the server: no settings, no database, no secrets in its environment.

A child process, not a thread: a thread's CPU cannot be capped, and pure-Python parsing
holds the GIL the request threads need. Spawned afresh (subprocess, which neither runs
the parent's fork hooks nor copies its threads' locks) rather than forked from the server:
bench/extraction_bounds.py measures what that costs a normal document.

Whatever stops the child, the parent raises ExtractionError with the reason, which the
ingestion records on the document (`failed`).
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from retrieval.chunking import Piece, split
from retrieval.extract import BoundExceeded, Bounds, ExtractionError, UnsupportedMedia, extract_text

ROOT = Path(__file__).resolve().parent.parent
# The wall deadline, in multiples of the CPU allowance, plus a child's start-up.
WALL_FACTOR = 10
START_SECONDS = 30.0
NICE = 10
# What the child may inherit from the server's environment: where Python finds packages.
INHERITED = ("PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE")


@dataclass(frozen=True)
class Limits:
    """The bounds on reading one document (the DOCUMENT_* settings)."""

    decompressed_bytes: int
    chunks: int
    chunk_tokens: int
    chunk_overlap: int
    cpu_seconds: float
    memory_bytes: int

    def wall_seconds(self) -> float:
        return self.cpu_seconds * WALL_FACTOR + START_SECONDS


def extract_pieces(data: bytes, media_type: str, limits: Limits) -> list[Piece]:
    """The document's chunks, read and split in a child process within `limits`. Raises
    ExtractionError (BoundExceeded when a bound stopped it) with the reason."""
    header = json.dumps({"mediaType": media_type, "limits": asdict(limits)}).encode()
    environment = {name: os.environ[name] for name in INHERITED if name in os.environ}
    child = subprocess.Popen(
        [sys.executable, "-m", "retrieval.bounded_extract"],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = child.communicate(header + b"\n" + data, timeout=limits.wall_seconds())
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise BoundExceeded(
            f"reading the document did not finish within {limits.wall_seconds():.0f} s "
            f"(DOCUMENT_EXTRACTION_SECONDS × {WALL_FACTOR} + {START_SECONDS:.0f})"
        ) from None
    return _answer(child.returncode, out, err, limits)


def _answer(code: int, out: bytes, err: bytes, limits: Limits) -> list[Piece]:
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        raise BoundExceeded(
            f"reading the document used more than {limits.cpu_seconds:g} s of CPU "
            "(DOCUMENT_EXTRACTION_SECONDS)"
        )
    try:
        answer = json.loads(out)
    except ValueError:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {code}"]
        raise ExtractionError(f"reading the document failed: {tail[0]}") from None
    if "bound" in answer:
        raise BoundExceeded(answer["bound"])
    if "error" in answer:
        raise ExtractionError(answer["error"])
    return [Piece(*fields) for fields in answer["pieces"]]


# ---------------------------------------------------------------- the child


def _limit_self(limits: Limits) -> None:
    cpu = max(1, math.ceil(limits.cpu_seconds))
    # SIGXCPU at the soft limit, SIGKILL a second later should it be caught.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.nice(NICE)


def read(data: bytes, media_type: str, limits: Limits) -> list[Piece]:
    """Extract and split within the bounds that are counted (not CPU and memory, which
    the kernel holds the child to). Raises ExtractionError, BoundExceeded."""
    bounds = Bounds(limits.decompressed_bytes, limits.chunks, limits.chunk_tokens)
    text = extract_text(data, media_type, bounds)
    pieces = split(text, size=limits.chunk_tokens, overlap=limits.chunk_overlap)
    if len(pieces) > limits.chunks:
        raise BoundExceeded(
            f"the document makes {len(pieces)} chunks, more than {limits.chunks} "
            "(DOCUMENT_MAX_CHUNKS)"
        )
    return pieces


def main() -> None:
    header = json.loads(sys.stdin.buffer.readline())
    limits = Limits(**header["limits"])
    _limit_self(limits)
    data = sys.stdin.buffer.read()
    answer: dict[str, Any]
    try:
        pieces = read(data, header["mediaType"], limits)
        answer = {"pieces": [list(asdict(piece).values()) for piece in pieces]}
    except BoundExceeded as exc:
        answer = {"bound": str(exc)}
    except MemoryError:
        answer = {
            "bound": f"reading the document needed more than {limits.memory_bytes} bytes of "
            "memory (DOCUMENT_EXTRACTION_MEMORY_BYTES)"
        }
    except UnsupportedMedia as exc:
        answer = {"error": f"unsupported media type {exc.media_type}"}
    except (ExtractionError, ValueError) as exc:
        answer = {"error": str(exc) or type(exc).__name__}
    sys.stdout.buffer.write(json.dumps(answer).encode())


if __name__ == "__main__":
    main()
