"""Prompt attacks in user-authored text: overriding the instructions, jailbreak role-play,
extracting the system prompt, fake role delimiters, and any of these base64-, hex- or
rot13-encoded.

Talking about prompts is not an attack: "how does prompt injection work?", "what is the
system prompt field for?", "ignore the typo in my last message" and ordinary role-play
("pretend to be a customer") pass. Quoting an attack verbatim is indistinguishable from
making one and is blocked.
"""

from __future__ import annotations

import re
from dataclasses import replace

from guardrails.detectors import encodings
from guardrails.detectors.classifier import ClassifierDetector, windows
from guardrails.detectors.prompt_attack_language import LANGUAGE
from guardrails.detectors.prompt_attack_multilingual import MULTILINGUAL
from guardrails.detectors.rules import (
    INVISIBLE,
    Hit,
    WeightedPattern,
    combine,
    explain,
    find,
    fold,
    threshold,
    verdict,
)
from guardrails.engines.base import Stage, Verdict


def _verbatim(label: str, weight: float, body: str, flags: int = re.I | re.M) -> WeightedPattern:
    return WeightedPattern(label, weight, re.compile(body, flags))


# Matched on the text as written: folding would read "<|im_start|>" as "<iim_start|>".
DELIMITERS: tuple[WeightedPattern, ...] = (
    _verbatim(
        "fake role delimiter",
        0.9,
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|start_header_id"
        r"|end_header_id|eot_id|begin_of_text)\|>",
    ),
    _verbatim("fake role delimiter", 0.8, r"\[/?INST\]|<<\s*/?SYS\s*>>"),
    _verbatim(
        "fake role delimiter",
        0.8,
        r"^\s*(?:#{1,6}|\*\*|\[|<)\s*(?:system|assistant|developer|admin)\s*"
        r"(?:prompt|message|override|instructions?)?\s*(?:\]|>|\*\*)?\s*:",
    ),
    _verbatim(
        "fake role delimiter",
        1.0,
        r"</(?:user|human|input)>\s*<(?:system|assistant|admin|instructions?)>",
    ),
    _verbatim("fake role delimiter", 0.4, r"</?(?:system|user|assistant|instructions?|human)>"),
    _verbatim("fake role delimiter", 0.4, r"^\s*(?:system|assistant)\s*:"),
    _verbatim("fake role delimiter", 0.6, r"\[(?:system|admin|developer|sys)\]"),
    _verbatim("fake role delimiter", 0.6, r"^\s*new\s+rules?\s*:"),
    _verbatim(
        "fake role delimiter",
        0.6,
        r"(?:system|admin|developer|security|priority)\s+(?:override|command|notice|alert)\s*:",
    ),
    # Shouted, these end the user's turn; in lower case they are ordinary prose.
    _verbatim(
        "fake role delimiter",
        0.8,
        r"\bEND\s+OF\s+(?:THE\s+)?(?:USER\s+)?(?:INPUT|PROMPT|MESSAGE|INSTRUCTIONS|CONVERSATION"
        r"|TEXT)\b|\b(?:BEGIN|START)\s+(?:OF\s+)?(?:THE\s+)?(?:NEW\s+)?(?:SYSTEM|ADMIN|DEVELOPER)"
        r"\s+(?:PROMPT|MESSAGE|INSTRUCTIONS?|OVERRIDE|MODE)\b"
        r"|\b(?:NEW\s+)?(?:SYSTEM|ADMIN|DEVELOPER)\s+(?:OVERRIDE|PROMPT|MESSAGE|NOTICE)\b",
        flags=0,
    ),
    # "Dan" is a name; "DAN" is the jailbreak.
    _verbatim(
        "jailbreak role-play",
        1.0,
        r"(?i:you\s+are|you're|act\s+as|become|pretend\s+to\s+be)\s+(?i:now\s+)?DAN\b",
        flags=0,
    ),
)


# Up to this many characters the rules read all of a text (about 20 ms of CPU at most).
LONG = 16_000
# Text written backwards is a trick of short prompts; longer text is not worth the pass.
BACKWARDS_UP_TO = 2_000


class PromptAttackDetector:
    """Blocks prompt attacks; `sensitivity` ("low", "medium", "high") sets how much it takes.

    The rules run first and explain what they found with spans; what they pass, the learned
    classifier (guardrails.detectors.classifier) scores too, unless `classifier` is off.
    """

    def __init__(self, sensitivity: str = "medium", classifier: bool = True) -> None:
        self.sensitivity = sensitivity
        self.threshold = threshold(sensitivity)
        self.classifier = ClassifierDetector(sensitivity) if classifier else None

    def check(self, text: str, stage: Stage) -> Verdict:
        hits = self._windowed_hits(text)
        rules = _invisible(verdict(hits, self.threshold, "prompt attack"), text)
        if self.classifier is None or rules.blocked:  # blocked already: spare the classifier
            return rules
        learned = self.classifier.check(text, stage)
        window = learned.match
        if learned.blocked and window is not None:
            # Hits too weak to block on their own still say what the classifier saw.
            inside = [h for h in hits if window.start <= h.start and h.end <= window.end]
            named = explain(inside)
            if named["kind"] is not None:
                learned = replace(learned, kind=named["kind"], match=named["match"])
        return combine(rules, learned)

    def _windowed_hits(self, text: str) -> list[Hit]:
        """The rules' hits; past LONG characters only in the classifier's windows (at most
        MAX_WINDOWS of them, spread over the text), so that the cost stays bounded."""
        # Decoded text is checked again, and once more if it decodes further.
        if len(text) <= LONG:
            return self._hits(text, depth=2)
        return [
            Hit(start + h.start, start + h.end, h.label, h.weight)
            for start, end in windows(len(text))
            for h in self._hits(text[start:end], depth=2)
        ]

    def _hits(self, text: str, depth: int) -> list[Hit]:
        folded = fold(text)
        hits = folded.restore(find(LANGUAGE + MULTILINGUAL, folded.text))
        hits += find(DELIMITERS, text)
        rot13 = fold(encodings.rot13(text))
        if encodings.reads_as_english(rot13.text):
            hits += [
                Hit(h.start, h.end, "prompt attack in rot13", h.weight)
                for h in rot13.restore(find(LANGUAGE, rot13.text))
            ]
        if len(text) <= BACKWARDS_UP_TO:
            mirrored = fold(encodings.backwards(text))
            if encodings.reads_as_english(mirrored.text):
                # Offsets in the mirrored text, mirrored back onto the text as written.
                hits += [
                    Hit(len(text) - h.end, len(text) - h.start, "prompt attack backwards", h.weight)
                    for h in mirrored.restore(find(LANGUAGE, mirrored.text))
                ]
        if depth > 0:
            for run in encodings.decoded_runs(text):
                inner = verdict(self._hits(run.decoded, depth - 1), self.threshold, "")
                if inner.blocked:
                    label = f"prompt attack in {run.encoding}"
                    hits.append(Hit(run.start, run.end, label, inner.score))
        return hits


def _invisible(found: Verdict, text: str) -> Verdict:
    """An attack whose words were broken up by invisible characters (folding drops them
    before the rules read) was hidden, whatever it says."""
    match = found.match
    if match is None or INVISIBLE.isdisjoint(text[match.start : match.end]):
        return found
    return replace(found, kind="hidden")
