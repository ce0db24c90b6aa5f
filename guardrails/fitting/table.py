"""The leave-one-origin-out table that bench/guard_quality.py prints: for every set, what the
prompt-attack guardrail blocks of it when its origin was left out of all fitting and
tuning, at each sensitivity, by the classifier, by the rules and by both (as it runs)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from guardrails.detectors.classifier import MIN_WORDS
from guardrails.detectors.prompt_attack import PromptAttackDetector
from guardrails.engines.base import Stage
from guardrails.fitting import loso
from guardrails.fitting.corpus import Text
from guardrails.fitting.features import APPROACHES, FEATURIZERS

SENSITIVITIES = ("low", "medium", "high")
# The goals at Medium, on every origin left out.
ATTACK_GOAL = 0.85
BENIGN_GOAL = 0.01
HARMFUL_QUESTION_GOAL = 0.02


@dataclass(frozen=True)
class Row:
    set: str
    origin: str
    channel: str
    attack: bool
    harmful_question: bool
    size: int
    classifier: dict[str, float]  # share blocked by sensitivity
    rules: float  # at medium
    both: dict[str, float]  # rules or classifier, by sensitivity

    @property
    def goal(self) -> float:
        if self.attack:
            return ATTACK_GOAL
        return HARMFUL_QUESTION_GOAL if self.harmful_question else BENIGN_GOAL

    @property
    def met(self) -> bool:
        share = self.both["medium"]
        return share >= self.goal if self.attack else share <= self.goal


def rows(approach: str, texts: Sequence[Text], progress: Callable[[str], None]) -> list[Row]:
    make = [FEATURIZERS[name] for name in APPROACHES[approach]]
    held = loso.leave_one_origin_out(make, texts, progress=progress)
    rules = {s: PromptAttackDetector(s, classifier=False) for s in SENSITIVITIES}
    found: list[Row] = []
    for fold in held:
        by_set: dict[str, list[tuple[Text, float]]] = {}
        for text, score in zip(fold.texts, fold.scores, strict=True):
            by_set.setdefault(text.set, []).append((text, score))
        for name, scored in by_set.items():
            first = scored[0][0]
            stage: Stage = "context" if first.channel == "context" else "input"
            chosen = fold.thresholds[stage]
            ruled = {
                s: [rules[s].check(t.text, stage).blocked for t, _ in scored] for s in SENSITIVITIES
            }
            learned = {
                s: [
                    len(t.text.split(maxsplit=MIN_WORDS)) >= MIN_WORDS and score >= chosen[s]
                    for t, score in scored
                ]
                for s in SENSITIVITIES
            }
            found.append(
                Row(
                    set=name,
                    origin=fold.origin,
                    channel=first.channel,
                    attack=first.attack,
                    harmful_question=first.harmful_question,
                    size=len(scored),
                    classifier={s: statistics.fmean(learned[s]) for s in SENSITIVITIES},
                    rules=statistics.fmean(ruled["medium"]),
                    both={
                        s: statistics.fmean(
                            a or b for a, b in zip(ruled[s], learned[s], strict=True)
                        )
                        for s in SENSITIVITIES
                    },
                )
            )
    return sorted(found, key=lambda r: (r.channel, not r.attack, r.harmful_question, r.set))


def markdown(approach: str, found: Sequence[Row]) -> str:
    lines = [
        f"\nApproach `{approach}`: each set's origin left out of fitting and tuning. "
        "Blocked share: the classifier alone at Low / Medium / High, the rules alone at "
        "Medium, and both as the guardrail runs at Low / Medium / High.\n",
        "| set | origin | channel | kind | size | classifier L / M / H | rules M "
        "| guardrail L / M / H | goal at M |",
        "|---|---|---|---|---:|---|---:|---|---|",
    ]
    for r in found:
        kind = "attack" if r.attack else "harmful question" if r.harmful_question else "benign"
        mark = "met" if r.met else "MISSED"
        lines.append(
            f"| {r.set} | {r.origin} | {r.channel} | {kind} | {r.size} "
            f"| {_three(r.classifier)} | {r.rules:.1%} | {_three(r.both)} "
            f"| {'≥' if r.attack else '≤'} {r.goal:.0%} {mark} |"
        )
    lines.append("")
    lines.append(summary(approach, found))
    return "\n".join(lines)


def summary(approach: str, found: Sequence[Row]) -> str:
    attacks = [r.both["medium"] for r in found if r.attack]
    benign = [r.both["medium"] for r in found if not r.attack and not r.harmful_question]
    learned = [r.classifier["medium"] for r in found if r.attack]
    return (
        f"`{approach}` at Medium: attack sets blocked {statistics.fmean(attacks):.1%} on "
        f"average (lowest {min(attacks):.1%}; classifier alone {statistics.fmean(learned):.1%}"
        f"), benign sets {statistics.fmean(benign):.2%} on average (highest "
        f"{max(benign):.1%}); goals met on {sum(r.met for r in found)} of {len(found)} sets."
    )


def _three(shares: dict[str, float]) -> str:
    return " / ".join(f"{shares[s]:.1%}" for s in SENSITIVITIES)
