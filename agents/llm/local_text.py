"""The offline model's answers made of text it was given: a RAG answer quoted from its
passages, the grounding verdict on an answer, a judge's score of an answer, a question
rewritten as a search query, and what it says of the images and documents a user sent."""

from __future__ import annotations

import re
from typing import Any

from agents.llm.base import Attachment

_WORD = re.compile(r"[a-z]+")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
STOP = frozenset(
    """a an the is are was of to in on for and or with what whats how me my you your it this
    that please can could would i be by as at from do does""".split()  # noqa: SIM905
)
DO_NOT_KNOW = "I do not know: the documents do not say."


def words(text: str) -> set[str]:
    """The content words of a text, lowercased."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOP}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_BREAK.split(text) if s.strip()]


def answer_from_passages(passages: tuple[str, ...], question: str) -> str:
    """The one or two sentences of the passages that share the most words with the question,
    best first; a question found in the passages (an FAQ's) is not an answer, so statements
    come before questions."""
    asked = words(question)
    found = [s for passage in passages for s in sentences(passage)]
    scored = sorted(
        (
            (len(asked & words(s)), not s.endswith("?"), -i, s)
            for i, s in enumerate(found)
            if asked & words(s)
        ),
        reverse=True,
    )
    best = [s for *_, s in scored[:2]]
    if not best:
        return DO_NOT_KNOW
    return " ".join(best)


def grounding(passages: tuple[str, ...], checked: str) -> dict[str, Any]:
    """Grounded when each sentence of the answer shares most of its words with the passages.

    `checked` is the text the runtime asks about; the answer is what follows its
    "Answer:" line, and when no passages came with the request its context is what precedes.
    """
    context, marker, answer = checked.rpartition("\n\nAnswer:\n")
    if not marker:
        context, answer = "", checked
    known = words(" ".join(passages) if passages else context)
    said = [s for s in re.split(r"(?<=[.!?])\s+", answer) if words(s)]
    supported = [len(words(s) & known) / len(words(s)) >= 0.6 for s in said]
    score = sum(supported) / len(supported) if supported else 1.0
    return {"grounded": all(supported), "score": round(score, 3)}


def judgement(context: tuple[str, ...]) -> dict[str, Any]:
    """A judge's score: the share of the reference's content words the answer has.

    `context` is (the answer, its reference: the case's expected output, else the rubric).
    Deterministic, so an experiment's judge is tested with no provider.
    """
    answer, reference = (*context, "", "")[:2]
    wanted, said = words(reference), words(answer)
    if not wanted:
        has = bool(said)
        return {"score": float(has), "reason": "an answer" if has else "no answer"}
    found = sorted(wanted & said)
    missing = sorted(wanted - said)
    reason = f"the answer has {len(found)} of the reference's {len(wanted)} words"
    if missing:
        reason += ": it lacks " + ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
    return {"score": round(len(found) / len(wanted), 3), "reason": reason}


def search_query(question: str) -> str:
    """A question's content words in their order, as a search engine wants them."""
    found = [w for w in _WORD.findall(question.lower()) if w not in STOP]
    return " ".join(dict.fromkeys(found)) or question


# ---------------------------------------------------------------- attachments


def describe(attachment: Attachment) -> str:
    """ "an image (image/png, 1234 bytes)", 'a document "q3.pdf" (application/pdf, 20480
    bytes)'."""
    article = "an image" if attachment.kind == "image" else "a document"
    name = f' "{attachment.name}"' if attachment.name else ""
    return f"{article}{name} ({attachment.media_type}, {len(attachment.data)} bytes)"


def received(attachments: tuple[Attachment, ...]) -> str:
    """What the offline model says of the attachments it got, and that it cannot use them."""
    listed = [describe(a) for a in attachments]
    if len(listed) == 1:
        items = listed[0]
    else:
        items = f"{len(listed)} attachments: " + ", ".join(listed[:-1]) + " and " + listed[-1]
    kinds = {a.kind for a in attachments}
    cannot = " or ".join(
        verb
        for kind, verb in (("image", "see images"), ("document", "read documents"))
        if kind in kinds
    )
    return f"I received {items}, but I cannot {cannot}: I am the offline model."
