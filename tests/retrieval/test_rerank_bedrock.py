"""Reranking on Bedrock (RERANK_PROVIDER=bedrock): what boto3 sends to Rerank, whose order
and scores search keeps, retries, and how a failure reaches search, /v1/search and a RAG run.

The fake Bedrock scores each text by the share of the query's words it holds; the
embedder stays local, so only reranking leaves the process.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents.models import Agent
from retrieval.errors import RerankError
from retrieval.indexing import document_embedder
from retrieval.models import Document
from retrieval.nodes import Node
from retrieval.rerank import rerank, rerank_local
from retrieval.search import SearchRequest, search
from tests.fakes.bedrock import FakeBedrock, Ranked, bedrock_environment, rerank_score
from tests.fakes.server import Fail, Turn

QUERY = "vacation days carry over"
CORPUS = {
    "carry": "Unused vacation days carry over into the next year.",
    "earn": "Every employee earns 25 vacation days per year.",
    "trains": "Book trains for trips under four hours.",
}
TITAN_RERANK = "arn:aws:bedrock:us-east-1::foundation-model/amazon.rerank-v1:0"


@dataclass(frozen=True)
class Item:
    text: str
    score: float = 0.0


@pytest.fixture(scope="module")
def bedrock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeBedrock]:
    with bedrock_environment(tmp_path_factory.mktemp("aws")) as fake:
        yield fake


@pytest.fixture
def bedrock(bedrock_server: FakeBedrock, settings: Any) -> FakeBedrock:
    """The fake, scoring every Rerank, and the deployment reranking on Bedrock."""
    bedrock_server.reset()
    bedrock_server.fallback = Turn()
    settings.RERANK_PROVIDER = "bedrock"
    return bedrock_server


@pytest.fixture
def corpus(add_document: Any) -> dict[str, Document]:
    return {title: add_document(text, title=title) for title, text in CORPUS.items()}


def find(environment: Any, query: str = QUERY, **options: Any) -> list[Node]:
    request = SearchRequest(query=query, **options)
    [vector] = document_embedder().embed([query])
    return search(environment_id=environment.pk, request=request, vector=vector)


def sent_texts(body: dict[str, Any]) -> list[str]:
    return [s["inlineDocumentSource"]["textDocument"]["text"] for s in body["sources"]]


# --- what Bedrock is sent ------------------------------------------------------------------


@pytest.mark.django_db
def test_bedrock_is_sent_the_query_every_candidate_and_the_result_count(
    bedrock: FakeBedrock, corpus: dict[str, Document], env: Any
) -> None:
    find(env, reranker_top_n=2)

    [body] = bedrock.reranks()
    assert body["queries"] == [{"type": "TEXT", "textQuery": {"text": QUERY}}]
    assert sorted(sent_texts(body)) == sorted(CORPUS.values())
    assert {(s["type"], s["inlineDocumentSource"]["type"]) for s in body["sources"]} == {
        ("INLINE", "TEXT")
    }
    assert body["rerankingConfiguration"] == {
        "type": "BEDROCK_RERANKING_MODEL",
        "bedrockRerankingConfiguration": {
            "numberOfResults": 2,
            "modelConfiguration": {"modelArn": TITAN_RERANK},
        },
    }


@pytest.mark.django_db
def test_bedrock_is_asked_for_no_more_results_than_candidates(
    bedrock: FakeBedrock, corpus: dict[str, Document], env: Any
) -> None:
    nodes = find(env, reranker_top_n=13)

    [body] = bedrock.reranks()
    assert body["rerankingConfiguration"]["bedrockRerankingConfiguration"]["numberOfResults"] == 3
    assert len(nodes) == 3


@pytest.mark.parametrize(
    ("model", "arn"),
    [
        (
            "cohere.rerank-v3-5:0",
            "arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0",
        ),
        (
            "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0",
            "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0",
        ),
    ],
    ids=["model-id-in-the-client-region", "full-arn-as-given"],
)
def test_rerank_model_is_sent_as_a_model_arn(
    bedrock: FakeBedrock, settings: Any, model: str, arn: str
) -> None:
    settings.RERANK_MODEL = model

    rerank(QUERY, [Item("vacation days")], top_n=1)

    [body] = bedrock.reranks()
    assert body["rerankingConfiguration"]["bedrockRerankingConfiguration"][
        "modelConfiguration"
    ] == {"modelArn": arn}


# --- what search keeps ---------------------------------------------------------------------


@pytest.mark.django_db
def test_search_keeps_bedrock_order_and_scores(
    bedrock: FakeBedrock, corpus: dict[str, Document], env: Any
) -> None:
    nodes = find(env, reranker_top_n=3)

    # The fake's scores: every query word, two of four, none.
    assert [(n.title, n.score) for n in nodes] == [("carry", 1.0), ("earn", 0.5), ("trains", 0.0)]
    assert [n.score for n in nodes] == [rerank_score(QUERY, n.text) for n in nodes]


@pytest.mark.django_db
def test_search_takes_bedrock_ranking_as_given_then_applies_the_threshold(
    bedrock: FakeBedrock, corpus: dict[str, Document], env: Any
) -> None:
    # A ranking no lexical score would give: Bedrock's word is final.
    bedrock.script(
        Ranked(
            results=[
                {"index": 2, "relevanceScore": 0.91},
                {"index": 0, "relevanceScore": 0.42},
                {"index": 1, "relevanceScore": 0.07},
            ]
        )
    )

    nodes = find(env, reranker_top_n=3, threshold=0.4)

    sent = sent_texts(bedrock.reranks()[0])
    assert [(n.text, n.score) for n in nodes] == [(sent[2], 0.91), (sent[0], 0.42)]


@pytest.mark.django_db
def test_search_of_an_empty_environment_never_calls_bedrock(bedrock: FakeBedrock, env: Any) -> None:
    assert find(env) == []
    assert bedrock.requests == []


def test_no_candidates_make_no_call(bedrock: FakeBedrock) -> None:
    assert rerank(QUERY, [], top_n=5) == []
    assert bedrock.requests == []


def test_past_a_thousand_candidates_the_first_thousand_are_reranked(bedrock: FakeBedrock) -> None:
    items = [Item(f"passage {i}") for i in range(1001)]

    ranked = rerank("passage 1000", items, top_n=3)

    [body] = bedrock.reranks()
    assert sent_texts(body) == [item.text for item in items[:1000]]
    # The one passage that holds every query word was never sent.
    assert ranked == [Item("passage 0", 0.5), Item("passage 1", 0.5), Item("passage 2", 0.5)]


# --- failures ------------------------------------------------------------------------------


def test_throttling_is_retried(bedrock: FakeBedrock) -> None:
    bedrock.script(Fail(429, "Too many requests, please wait before trying again."))

    ranked = rerank(QUERY, [Item("trains"), Item("vacation days")], top_n=1)

    assert ranked == [Item("vacation days", score=0.5)]
    assert len(bedrock.reranks()) == 2


def test_a_persistent_failure_is_a_rerank_error_after_the_retries(
    bedrock: FakeBedrock, settings: Any
) -> None:
    settings.RERANK_MAX_RETRIES = 1
    bedrock.fallback = Fail(500, "the reranker is down")

    down = r"InternalServerException: the reranker is down \(HTTP 500, 2 attempts\)"
    with pytest.raises(RerankError, match=down):
        rerank(QUERY, [Item("vacation days")], top_n=1)
    assert len(bedrock.reranks()) == 2


def test_a_validation_exception_is_not_retried(bedrock: FakeBedrock) -> None:
    bedrock.fallback = Fail(400, "The provided model identifier is invalid.")

    invalid = r"ValidationException: .*model identifier.* \(HTTP 400, 1 attempt\)"
    with pytest.raises(RerankError, match=invalid):
        rerank(QUERY, [Item("vacation days")], top_n=1)
    assert len(bedrock.reranks()) == 1


@pytest.mark.parametrize(
    "results",
    [
        [{"index": 5, "relevanceScore": 0.5}],
        [{"index": 0, "relevanceScore": 0.5}, {"index": 0, "relevanceScore": 0.4}],
        [{"index": 0}],
        "not a list",
    ],
    ids=["index-out-of-range", "index-twice", "no-score", "not-a-list"],
)
def test_a_malformed_answer_is_a_rerank_error(bedrock: FakeBedrock, results: Any) -> None:
    bedrock.script(Ranked(results=results))

    with pytest.raises(RerankError, match=r"malformed ranking from amazon\.rerank-v1:0"):
        rerank(QUERY, [Item("vacation days"), Item("trains")], top_n=2)


@pytest.mark.django_db
def test_search_api_answers_502_naming_the_rerank_failure(
    bedrock: FakeBedrock, corpus: dict[str, Document], owner_client: Any
) -> None:
    bedrock.fallback = Fail(500, "the reranker is down")

    response = owner_client.post("/v1/search", {"query": QUERY}, format="json")

    assert response.status_code == 502
    assert response["Content-Type"] == "application/json"
    detail = response.json()["detail"]
    assert detail.startswith("Bedrock refused to rerank with amazon.rerank-v1:0: ")
    assert "the reranker is down (HTTP 500" in detail


@pytest.mark.django_db
def test_search_api_answers_an_embedding_failure_the_same_way(
    bedrock: FakeBedrock, corpus: dict[str, Document], owner_client: Any, settings: Any
) -> None:
    # The corpus was embedded locally; the failing query embedding never reaches the table.
    settings.EMBEDDING_PROVIDER = "bedrock"
    settings.EMBEDDING_DIM = 256
    bedrock.fallback = Fail(403, "not authorized to invoke the model", code="AccessDeniedException")

    response = owner_client.post("/v1/search", {"query": QUERY}, format="json")

    assert response.status_code == 502
    assert "AccessDeniedException" in response.json()["detail"]
    assert bedrock.reranks() == []


@pytest.mark.django_db
def test_rag_run_fails_as_retrieval_unavailable_when_reranking_fails(
    bedrock: FakeBedrock,
    corpus: dict[str, Document],
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent: Agent = make_agent("document-helper", "rag")
    bedrock.fallback = Fail(500, "the reranker is down")

    response = owner_client.post(
        f"/v1/agents/{agent.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "Do vacation days carry over?"}]},
        format="json",
    )

    assert response.status_code == 502
    assert response.json()["detail"].startswith("retrieval_unavailable: Bedrock refused to rerank")
    assert response["X-Run-Id"]


# --- choosing the reranker -----------------------------------------------------------------


@pytest.mark.django_db
def test_local_is_the_default_and_calls_no_one(
    bedrock_server: FakeBedrock, corpus: dict[str, Document], env: Any, settings: Any
) -> None:
    bedrock_server.reset()

    nodes = find(env, reranker_top_n=3)

    assert settings.RERANK_PROVIDER == "local"
    assert bedrock_server.requests == []
    assert nodes[0].title == "carry"
    assert 0.7 < nodes[0].score <= 1  # every term, side by side: the local score, not 1.0
    assert [n.text for n in nodes] == [n.text for n in rerank_local(QUERY, nodes, top_n=3)]


def test_an_unknown_provider_is_improperly_configured(settings: Any) -> None:
    settings.RERANK_PROVIDER = "cohere"

    with pytest.raises(ImproperlyConfigured, match="RERANK_PROVIDER is 'cohere'"):
        rerank(QUERY, [Item("vacation days")], top_n=1)
