"""`source_recall`: the share of expected documents the answer cites."""

from __future__ import annotations

import pytest

from agentbuilder.errors import Invalid
from agentbuilder.wire import parse
from agents.evals.scorers.base import Expected, Observed
from agents.evals.scorers.source_recall import SourceRecall, SourceRecallOptions


def test_all_cited_passes() -> None:
    score = SourceRecall()(
        Expected(source_doc_ids=("d1", "d2")), Observed("", source_doc_ids=("d2", "d1", "d9"))
    )
    assert score is not None
    assert score.passed
    assert score.score == 1.0


def test_the_share_cited_passes_at_min() -> None:
    expected = Expected(source_doc_ids=("d1", "d2", "d3"))
    observed = Observed("", source_doc_ids=("d1", "d2"))
    strict = SourceRecall()(expected, observed)
    assert strict is not None
    assert not strict.passed
    assert strict.score == pytest.approx(2 / 3)
    assert strict.reason == "2 of 3 expected documents cited; missing d3"
    assert SourceRecall(min=0.6)(expected, observed).passed  # type: ignore[union-attr]


def test_no_source_and_nothing_expected() -> None:
    score = SourceRecall()(Expected(source_doc_ids=("d1",)), Observed(""))
    assert score is not None
    assert score.score == 0.0
    assert SourceRecall()(Expected(source_doc_ids=()), Observed("")) is None
    assert SourceRecall()(Expected(), Observed("")) is None


@pytest.mark.parametrize("bad", [1.5, -0.1, "1", True])
def test_min_is_a_number_from_0_to_1(bad: object) -> None:
    with pytest.raises(Invalid) as caught:
        parse(SourceRecallOptions, {"min": bad})
    assert caught.value.errors[0].loc == ("min",)
