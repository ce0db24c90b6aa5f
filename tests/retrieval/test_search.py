"""Search over ingested corpora: vector, full text and their RRF fusion, the HxQL filter in
the one SQL statement, adjacent chunks, reranking, the threshold, and what is never found."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from retrieval.configs import RagSettings
from retrieval.hxql import parse_hxql
from retrieval.indexing import document_embedder
from retrieval.models import TS_CONFIG, Chunk, Document, DocumentStatus
from retrieval.nodes import Neighbour, Node
from retrieval.rag import search_now, search_request
from retrieval.search import (
    RRF_K,
    Scope,
    SearchRequest,
    merge_spans,
    search,
    vector_plan,
    with_neighbours,
)
from retrieval.services import document_reingest

pytestmark = pytest.mark.django_db


def find(environment: Any, query: str, **options: Any) -> list[Node]:
    request = SearchRequest(query=query, **options)
    [vector] = document_embedder().embed([query])
    return search(environment_id=environment.pk, request=request, vector=vector)


def titles(nodes: list[Node]) -> list[str]:
    return [n.title for n in nodes]


# --- hybrid ranking ------------------------------------------------------------------------

# Every chunk holds "running dogs" side by side and none holds "again", so the reranker
# scores them all alike (coverage 2/3, proximity 1 x 2/3) and only the retrieval score orders
# them.
# The lexical embedder sees raw words: the shortest chunk is nearest. Full text sees stems:
# "dog", "runs" and "ran" all count, so the chunk with most of them ranks first there.
# ("again" is an English stop word: the full-text query is 'run' & 'dog'.)
HYBRID_QUERY = "running dogs again"
HYBRID_CORPUS = {
    "short": "Running dogs.",
    "stems": "Running dogs: a dog runs, a dog ran.",
    "padded": "Running dogs were seen by a farmer with a dog near the river where the water "
    "runs slowly past the old mill.",
}
RERANK_BASE = 0.7 * 2 / 3 + 0.3 * 2 / 3


def rrf(*ranks: int) -> float:
    return sum(1 / (RRF_K + r) for r in ranks)


@pytest.fixture
def hybrid_corpus(add_document, env) -> dict[str, Document]:
    return {title: add_document(text, title=title) for title, text in HYBRID_CORPUS.items()}


def full_text_order(query: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT d.title FROM retrieval_chunk c JOIN retrieval_document d"
            " ON d.id = c.document_id, websearch_to_tsquery(%s::regconfig, %s) q"
            " WHERE c.search_vector @@ q ORDER BY ts_rank_cd(c.search_vector, q) DESC",
            [TS_CONFIG, query],
        )
        return [row[0] for row in cursor.fetchall()]


def test_vector_and_full_text_disagree_on_the_corpus(hybrid_corpus, env):
    assert titles(find(env, HYBRID_QUERY, hybrid=False)) == ["short", "stems", "padded"]
    assert full_text_order(HYBRID_QUERY) == ["stems", "padded", "short"]


def test_vector_only_scores_are_reciprocal_ranks(hybrid_corpus, env):
    nodes = find(env, HYBRID_QUERY, hybrid=False)

    assert titles(nodes) == ["short", "stems", "padded"]
    fused = [n.score - RERANK_BASE for n in nodes]
    assert fused == pytest.approx([0.01 * rrf(1), 0.01 * rrf(2), 0.01 * rrf(3)], abs=1e-9)


def test_hybrid_fuses_both_rankings_with_rrf_k60(hybrid_corpus, env):
    nodes = find(env, HYBRID_QUERY, hybrid=True)

    # vector: short 1, stems 2, padded 3; full text: stems 1, padded 2, short 3
    assert titles(nodes) == ["stems", "short", "padded"]
    fused = [n.score - RERANK_BASE for n in nodes]
    expected = [0.01 * rrf(2, 1), 0.01 * rrf(1, 3), 0.01 * rrf(3, 2)]
    assert fused == pytest.approx(expected, abs=1e-9)


def test_full_text_uses_english_stemming(add_document, env):
    add_document("The dog runs.", title="stemmed")
    add_document("Cats sleep all day.", title="unrelated")

    # No raw word in common with "running dogs", yet full text ranks it first: hybrid adds
    # exactly the first full-text rank's share to what the vector ranking gave it.
    vector_only = {n.title: n.score for n in find(env, "running dogs", hybrid=False)}
    hybrid = {n.title: n.score for n in find(env, "running dogs", hybrid=True)}
    assert hybrid["stemmed"] - vector_only["stemmed"] == pytest.approx(0.01 * rrf(1), abs=1e-9)
    assert hybrid["unrelated"] == pytest.approx(vector_only["unrelated"], abs=1e-9)
    assert max(hybrid, key=hybrid.__getitem__) == "stemmed"


# --- the HxQL filter, inside the one statement ---------------------------------------------


@pytest.fixture
def teams(add_document) -> dict[str, Document]:
    # Alike but not the same bytes: an upload of the same bytes is the first document.
    text = "Vacation policy of {}: employees get twenty five days of paid vacation."
    return {
        "hr-policy": add_document(
            text.format("HR"),
            title="hr-policy",
            doc_type="policy",
            metadata={"team": "hr", "year": 2024},
        ),
        "hr-faq": add_document(
            text.format("the HR FAQ"),
            title="hr-faq",
            doc_type="faq",
            metadata={"team": "hr", "year": 2023},
        ),
        "eng-policy": add_document(
            text.format("engineering"),
            title="eng-policy",
            doc_type="policy",
            metadata={"team": "eng", "year": 2024},
        ),
    }


@pytest.mark.parametrize(
    ("hxql", "expected"),
    [
        ("SELECT * FROM SysContent", {"hr-policy", "hr-faq", "eng-policy"}),
        ("SELECT * FROM SysContent WHERE team = 'hr'", {"hr-policy", "hr-faq"}),
        ("SELECT * FROM SysContent WHERE team != 'hr'", {"eng-policy"}),
        ("SELECT * FROM SysContent WHERE sys_docType = 'policy'", {"hr-policy", "eng-policy"}),
        ("SELECT * FROM SysContent WHERE team = 'hr' AND sys_docType = 'faq'", {"hr-faq"}),
        ("SELECT * FROM SysContent WHERE year >= 2024 AND NOT team = 'eng'", {"hr-policy"}),
        ("SELECT * FROM SysContent WHERE sys_title LIKE 'eng-%'", {"eng-policy"}),
        ("SELECT * FROM SysContent WHERE team IN ('ops', 'sales')", set()),
        ("SELECT * FROM SysContent WHERE missing IS NULL AND team = 'eng'", {"eng-policy"}),
    ],
)
def test_hxql_filter_narrows_the_documents(teams, env, hxql, expected):
    nodes = find(env, "vacation days", filter=parse_hxql(hxql))

    assert set(titles(nodes)) == expected


def search_statements(queries: list[dict[str, str]]) -> list[str]:
    """The captured SQL less the savepoints the test's transaction adds."""
    return [q["sql"] for q in queries if not q["sql"].upper().startswith(("SAVEPOINT", "RELEASE"))]


def test_one_statement_per_search_even_with_adjacent_chunks(add_document, env, settings):
    settings.CHUNK_TOKENS = 16
    settings.CHUNK_OVERLAP = 6
    body = " ".join(f"Fact {i} about vacation days is here." for i in range(40))
    add_document(body, title="long", metadata={"team": "hr"})
    add_document(body, title="other team", metadata={"team": "eng"})
    assert Chunk.objects.filter(document__title="long").count() >= 22

    hxql = parse_hxql("SELECT * FROM SysContent WHERE team = 'hr'")
    [vector] = document_embedder().embed(["vacation days"])
    request = SearchRequest(
        query="vacation days",
        filter=hxql,
        limit=20,
        reranker_top_n=20,
        adjacent_range=2,
    )
    with CaptureQueriesContext(connection) as captured:
        nodes = search(environment_id=env.pk, request=request, vector=vector)

    hits = [n for n in nodes if n.neighbours]
    assert len(hits) == 20
    assert {n.title for n in nodes} == {"long"}
    assert len({n.chunk_id for n in nodes}) == len(nodes)  # neighbours listed once
    statements = search_statements(captured.captured_queries)
    assert len(statements) == 2, statements
    scope, select = statements
    # The chunks the filter leaves, counted from the documents: few, so the search is exact.
    assert 'FROM "retrieval_chunk"' not in scope
    assert "SUM" in scope
    assert "reltuples" in scope  # the index's size: PostgreSQL's estimate
    # The filter, both rankings, the fusion and the neighbours: all in the one SELECT.
    for part in ("'team'", "retrieval_document", "websearch_to_tsquery", "<=>", "json_agg"):
        assert part in select


def test_a_search_over_the_hnsw_index_sets_ef_search_in_its_transaction(
    add_document, env, settings
):
    settings.RETRIEVAL_EXACT_MAX_CHUNKS = 0
    settings.HNSW_EF_SEARCH = 77
    add_document("Vacation days are twenty five.")
    # The index's size is the table's reltuples, which ANALYZE writes in place: an earlier
    # test's ANALYZE of its 1,000 chunks outlives its rollback, and the search would then
    # compare every chunk (ef_search above pgvector's maximum). Estimate this test's rows.
    analyze()
    with CaptureQueriesContext(connection) as captured:
        assert titles(find(env, "vacation", limit=5)) == ["Doc"]

    # Earlier tests' rolled-back chunks stay in the HNSW index until a vacuum; when they
    # are nearer the query they fill the index pass, and the search runs again exactly, a
    # statement more. What this test checks is the index pass.
    statements = search_statements(captured.captured_queries)
    [at] = [i for i, sql in enumerate(statements) if "set_config" in sql]
    assert "'hnsw.ef_search', '77', true" in statements[at]
    assert "<=>" in statements[at + 1]  # in the transaction set_config's `true` scopes


@pytest.mark.parametrize(
    ("chunks", "indexed", "limit", "ef"),
    [
        (10_000, 10_000, 10, None),  # few chunks: compare them all
        (100_000, 100_000, 10, 100),  # the whole index: HNSW_EF_SEARCH
        (100_000, 100_000, 400, 400),  # never fewer candidates than the limit
        (100_000, 100_000, 1000, 1000),
        (100_000, 100_000, 1001, None),  # past pgvector's maximum ef_search
        (20_000, 100_000, 10, 150),  # a fifth of the index: 3 x 10 / 0.2
        (50_000, 100_000, 10, 100),  # half: 60 < HNSW_EF_SEARCH
        (20_000, 1_000_000, 10, None),  # 2 %: 1,500 candidates would be needed
    ],
)
def test_vector_plan_grows_ef_search_as_the_filter_narrows(settings, chunks, indexed, limit, ef):
    settings.RETRIEVAL_EXACT_MAX_CHUNKS = 10_000
    settings.HNSW_EF_SEARCH = 100
    assert vector_plan(Scope(chunks=chunks, indexed=indexed), limit) == ef


def crowd(environment: Any, texts: list[str], title: str = "crowd") -> Document:
    """A ready document whose chunks are written directly (ingesting 1,000 would be slow)."""
    document = Document.objects.create(
        environment=environment, title=title, media_type="text/plain", source=b"x"
    )
    vectors = document_embedder().embed(texts)
    Chunk.objects.bulk_create(
        Chunk(document=document, position=i, text=text, token_count=5, embedding=vector)
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    )
    Document.objects.filter(pk=document.pk).update(
        status=DocumentStatus.READY, chunk_count=len(texts)
    )
    return document


def analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE retrieval_chunk")
        cursor.execute("ANALYZE retrieval_document")


def test_vector_search_finds_a_small_environment_next_to_a_big_one(add_document, env, other_env):
    # 1,000 chunks elsewhere, all nearer the query than ours: the HNSW index's nearest
    # candidates are all theirs, so a post-filtered index scan would find nothing here.
    crowd(other_env, [f"Vacation leave days paragraph {i}" for i in range(1000)])
    add_document("Garden notes: tomatoes need sun and water daily.", title="ours")
    analyze()
    with connection.cursor() as cursor:
        # Planner settings that favour the index, made certain (until the test ends).
        cursor.execute("SET LOCAL enable_seqscan = off")

    # The environment holds one ready chunk: a vector search must return it.
    assert titles(find(env, "vacation leave days", hybrid=False, limit=5)) == ["ours"]


def test_the_hnsw_path_visits_more_candidates_as_the_share_shrinks(env, other_env, settings):
    # 1,300 chunks alike, 300 of them (one in every 4 to 5) in the searched environment.
    texts = [f"Vacation leave days paragraph {i}" for i in range(1300)]
    crowd(other_env, [t for i, t in enumerate(texts) if i % 13 >= 3])
    crowd(env, [t for i, t in enumerate(texts) if i % 13 < 3], title="ours")
    analyze()
    request = {"hybrid": False, "limit": 10, "reranker_top_n": 10}
    settings.RETRIEVAL_EXACT_MAX_CHUNKS = 100  # 300 of 1,300 chunks: HNSW at 3 x 10 / 0.23
    settings.HNSW_EF_SEARCH = 40
    with CaptureQueriesContext(connection) as captured:
        indexed = find(env, "vacation leave days paragraph 7", **request)

    _scope, set_config, select = search_statements(captured.captured_queries)
    assert "'hnsw.ef_search', '130', true" in set_config
    assert "+ 0.0" not in select  # the index served it, with no exact run after
    assert titles(indexed) == ["ours"] * 10


def test_a_search_the_index_cannot_fill_runs_again_exactly(env, other_env, settings):
    # 1,000 chunks elsewhere, all nearer the query than any of ours.
    crowd(other_env, [f"Vacation leave days paragraph {i}" for i in range(1000)])
    crowd(env, [f"Vacation plans for week {i} of the year" for i in range(300)], title="ours")
    analyze()
    request = {"hybrid": False, "limit": 10, "reranker_top_n": 10}
    settings.RETRIEVAL_EXACT_MAX_CHUNKS = 100_000
    exact = find(env, "vacation leave days", **request)

    settings.RETRIEVAL_EXACT_MAX_CHUNKS = 100
    with CaptureQueriesContext(connection) as captured:
        found = find(env, "vacation leave days", **request)

    _scope, set_config, indexed, again = search_statements(captured.captured_queries)
    assert "hnsw.ef_search" in set_config
    assert "+ 0.0" not in indexed
    assert "+ 0.0" in again  # the exact ordering
    assert [n.chunk_id for n in found] == [n.chunk_id for n in exact]


# --- adjacent chunks -----------------------------------------------------------------------

ANIMALS = ["aardvark", "badger", "camel", "dingo", "emu", "ferret", "gecko", "heron"]
ZOO = " ".join(f"The {a} lives in sentence {i}." for i, a in enumerate(ANIMALS))


@pytest.fixture
def zoo(add_document, settings) -> list[Chunk]:
    settings.CHUNK_TOKENS = 16
    settings.CHUNK_OVERLAP = 6
    document = add_document(ZOO, title="zoo")
    chunks = list(document.chunks.order_by("position"))
    assert len(chunks) == 7  # each animal's sentence begins one chunk and ends the one before
    return chunks


def only_hit(environment: Any, query: str, **options: Any) -> Node:
    """The one hit of a search that keeps one; its neighbours are on it (and, without a
    merge, listed after it as nodes of their own)."""
    [node, *neighbours] = find(environment, query, reranker_top_n=1, **options)
    assert [n.chunk_id for n in neighbours] == [
        n.chunk_id for n in node.neighbours if not options.get("adjacent_merge")
    ]
    return node


def test_adjacent_chunks_are_clipped_at_the_first_chunk(zoo, env):
    node = only_hit(env, "aardvark", adjacent_range=2)

    assert node.position == 0
    assert node.text == zoo[0].text
    assert [(n.position, n.text) for n in node.neighbours] == [(1, zoo[1].text), (2, zoo[2].text)]


def test_adjacent_chunks_are_clipped_at_the_last_chunk(zoo, env):
    node = only_hit(env, "heron", adjacent_range=2)

    assert node.position == 6
    assert [n.position for n in node.neighbours] == [4, 5]


def test_adjacent_chunks_in_the_middle_come_from_both_sides(zoo, env):
    node = only_hit(env, "dingo lives in sentence 3. The emu", adjacent_range=1)

    assert node.position == 3
    assert [n.position for n in node.neighbours] == [2, 4]


def test_no_neighbours_without_a_range(zoo, env):
    assert only_hit(env, "aardvark").neighbours == ()


def test_merge_at_the_first_chunk_joins_neighbours_without_repeating_the_overlap(zoo, env):
    node = only_hit(env, "aardvark", adjacent_range=2, adjacent_merge=True)

    assert node.position == 0
    assert node.text == ZOO[zoo[0].start : zoo[2].end]
    assert node.text.count("badger") == node.text.count("camel") == 1


def test_merge_at_the_last_chunk(zoo, env):
    node = only_hit(env, "heron", adjacent_range=2, adjacent_merge=True)

    assert node.position == 6
    assert node.text == ZOO[zoo[4].start : zoo[6].end]
    assert node.text.endswith("The heron lives in sentence 7.")


def test_merge_with_a_range_past_both_ends_is_the_whole_document(add_document, env):
    add_document("The lone okapi sleeps.", title="one chunk")
    node = only_hit(env, "okapi", adjacent_range=5, adjacent_merge=True)

    assert node.text == "The lone okapi sleeps."
    assert node.neighbours == ()


def test_neighbours_never_come_from_another_document(add_document, env, zoo):
    add_document("The aardvark has a twin document.", title="twin")
    nodes = find(env, "aardvark", adjacent_range=2)

    [twin] = [n for n in nodes if n.title == "twin"]
    [first] = [n for n in nodes if n.title == "zoo" and n.position == 0]
    assert twin.neighbours == ()
    assert [n.chunk_id for n in first.neighbours] == [zoo[1].pk, zoo[2].pk]


def test_merge_keeps_text_that_only_looks_like_an_overlap(add_document, env, settings):
    settings.CHUNK_TOKENS = 9
    settings.CHUNK_OVERLAP = 0
    text = "Our services are all written in C#. .NET makes this easy for the team."
    document = add_document(text, title="stack")
    chunks = list(document.chunks.order_by("position"))
    assert [c.text for c in chunks] == [
        "Our services are all written in C#.",
        ".NET makes this easy for the team.",
    ]

    node = only_hit(env, "services written", adjacent_range=1, adjacent_merge=True)

    assert node.position == 0
    assert node.text == text  # not "… in C#.NET makes …"


def test_merge_spans_joins_chunks_by_their_offsets():
    def span(position: int, text: str, start: int) -> Neighbour:
        return Neighbour(position, position, text, start, start + len(text))

    text = "One. Two. Three. Four."
    overlapping = [span(0, "One. Two.", 0), span(1, "Two. Three.", 5), span(2, "Three. Four.", 10)]
    assert merge_spans(overlapping) == text
    assert merge_spans([span(0, "One.", 0), span(1, "Two.", 5)]) == "One. Two."
    # A chunk inside the one before adds nothing; touching chunks join without a space.
    assert merge_spans([span(0, "One. Two.", 0), span(1, "Two.", 5)]) == "One. Two."
    assert merge_spans([span(0, "C#", 0), span(1, ".NET", 2)]) == "C#.NET"
    assert merge_spans([]) == ""


def test_neighbours_without_merge_are_nodes_with_their_hits_score(zoo, env):
    query = "dingo lives in sentence 3. The emu"
    [hit, *neighbours] = find(env, query, reranker_top_n=1, adjacent_range=1)

    assert hit.position == 3
    assert [(n.position, n.text, n.score) for n in neighbours] == [
        (2, zoo[2].text, hit.score),
        (4, zoo[4].text, hit.score),
    ]
    assert all(n.neighbours == () for n in neighbours)


def test_a_chunk_near_two_hits_is_listed_once():
    def hit(position: int, *near: int) -> Node:
        neighbours = tuple(Neighbour(n, n, f"chunk {n}", 10 * n, 10 * n + 7) for n in near)
        return Node(position, uuid.uuid4(), "doc", position, f"chunk {position}", 1.0, neighbours)

    # Chunk 1 is next to both hits; chunk 2 is a hit itself.
    nodes = with_neighbours([hit(0, 1), hit(2, 1, 3)], SearchRequest("q", adjacent_range=1))

    assert [n.position for n in nodes] == [0, 1, 2, 3]


def test_a_copy_stored_before_content_hashes_is_found_once(add_document, env):
    original = add_document("Vacation: twenty five days a year.", title="original")
    copy = Document.objects.create(
        environment=env,
        title="copy",
        media_type="text/plain",
        source=bytes(original.source),
        status=DocumentStatus.READY,
        chunk_count=original.chunk_count,
    )
    for chunk in original.chunks.all():
        chunk.pk, chunk.document = None, copy
        chunk.save()

    nodes = find(env, "vacation days", reranker_top_n=5)

    assert titles(nodes) == ["original"]


# --- rerank and threshold ------------------------------------------------------------------


def test_reranker_top_n_caps_the_results(add_document, env):
    for n in range(6):
        add_document(f"Vacation note number {n}.", title=f"note {n}")

    assert len(find(env, "vacation note", reranker_top_n=13)) == 6
    assert len(find(env, "vacation note", reranker_top_n=2)) == 2
    assert len(find(env, "vacation note", limit=3, reranker_top_n=13)) == 3


@pytest.fixture
def graded(add_document) -> None:
    add_document("Alpha and beta sit together here.", title="both")
    add_document("Only alpha is in this one.", title="one")
    add_document("Nothing relevant whatsoever.", title="none")


def test_reranker_scores_coverage_not_retrieval_rank(graded, env):
    nodes = find(env, "alpha beta")

    assert titles(nodes) == ["both", "one", "none"]
    both, one, none = (n.score for n in nodes)
    assert both == pytest.approx(1.0)
    assert one == pytest.approx(0.5, abs=1e-3)  # half the terms: half the score
    assert none < 0.001  # only the retrieval score's tie-breaking share


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(0.0, ["both", "one", "none"]), (0.4, ["both", "one"]), (0.9, ["both"]), (1.01, [])],
)
def test_threshold_applies_to_reranked_scores(graded, env, threshold, expected):
    # Every fused score is below 2/61: a threshold of 0.4 applied before reranking would
    # leave nothing at all.
    assert titles(find(env, "alpha beta", threshold=threshold)) == expected


def test_threshold_comes_after_the_top_n_cut(graded, env):
    assert titles(find(env, "alpha beta", threshold=0.5, reranker_top_n=1)) == ["both"]


def test_rag_settings_take_the_threshold_from_settings(graded, env, settings):
    settings.RAG_SCORE_THRESHOLD = 0.4
    template = search_request(RagSettings())

    nodes = search_now(environment_id=env.pk, template=template, query="alpha beta")

    assert titles(nodes) == ["both", "one"]


def test_request_overrides_reach_the_search(graded, env):
    template = search_request(
        RagSettings(),
        {"reranker_top_n": 1, "hxql_query": "SELECT * FROM SysContent WHERE sys_title = 'one'"},
    )
    assert titles(search_now(environment_id=env.pk, template=template, query="alpha")) == ["one"]


# --- what is never found -------------------------------------------------------------------


def test_documents_of_another_environment_are_never_found(add_document, env, other_env):
    text = "The secret launch date is in March."
    add_document(text, title="ours")
    add_document(text, title="theirs", environment=other_env)
    add_document("Launch secrets of the other environment only.", environment=other_env)

    assert titles(find(env, "secret launch date", reranker_top_n=50)) == ["ours"]
    assert titles(find(env, "secret launch date", hybrid=False, reranker_top_n=50)) == ["ours"]
    assert set(titles(find(other_env, "secret launch date", reranker_top_n=50))) == {
        "theirs",
        "Doc",
    }


def test_search_in_an_empty_environment_finds_nothing(add_document, env, other_env):
    add_document("Only here.", environment=other_env)
    assert find(env, "only here") == []


def test_pending_and_failed_documents_are_never_found(add_document, env):
    ready = add_document("Quarterly targets were met.", title="ready")
    reingesting = add_document("Quarterly targets were missed.", title="reingesting")
    broken = add_document("Quarterly targets were revised.", title="broken")
    # Chunks of an earlier ingestion still exist while a re-ingestion is pending.
    document_reingest(document=reingesting)
    Document.objects.filter(pk=broken.pk).update(status=DocumentStatus.FAILED)
    assert Chunk.objects.filter(document__in=[reingesting, broken]).count() == 2

    assert titles(find(env, "quarterly targets", reranker_top_n=50)) == [ready.title]
    assert titles(find(env, "quarterly targets", hybrid=False)) == [ready.title]


def test_a_query_without_words_still_answers(add_document, env):
    add_document("Something to find.")
    nodes = find(env, "?!")
    assert len(nodes) == 1  # the vector ranking alone; full text has no terms
