"""`source_recall`: the share of `expected.sourceDocIds` among the documents a RAG answer
cites (its `sourceNodes`' `docId`s); passed at `min` or more (1: all of them).

A case with `sourceDocIds: []` expects nothing to be recalled: the scorer does not apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from agentbuilder.wire import CamelModel
from agents.evals.scorers.base import Expected, Observed, Score

LISTED = 5


class SourceRecallOptions(CamelModel):
    min: float = Field(1.0, ge=0, le=1, strict=True, allow_inf_nan=False)


@dataclass(frozen=True)
class SourceRecall:
    name: str = "source_recall"
    min: float = 1.0

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        want = list(dict.fromkeys(expected.source_doc_ids or ()))
        if not want:
            return None
        cited = set(observed.source_doc_ids)
        missing = [d for d in want if d not in cited]
        recall = (len(want) - len(missing)) / len(want)
        reason = f"{len(want) - len(missing)} of {len(want)} expected documents cited"
        if missing:
            named = ", ".join(missing[:LISTED])
            more = f" and {len(missing) - LISTED} more" if len(missing) > LISTED else ""
            reason += f"; missing {named}{more}"
        return Score(recall, recall >= self.min, reason)
