"""RAG agents end to end (docs/api.md#configs, #rag-outputs): a small corpus ingested for
the default environment, then retrieve ▸ prompt ▸ answer through invoke and invoke-stream on
every backend, the request's retrieval overrides, environments, the hallucination check,
multihop query refinement, and the `rag` tool of a tool agent.

The offline model answers by quoting the context sentences that best match the question;
the fakes answer as scripted and record the prompt they were sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import override_settings

import agents.rag
from agents.configs import DEFAULT_RAG_PROMPT
from agents.llm.base import GROUNDING_TOOL
from agents.models import Environment, Run
from agents.runtime.rag_agent import REFINE_BELOW, REFINE_PROMPT
from retrieval.models import Document
from retrieval.services import document_reingest
from tests.conftest import client_for
from tests.fakes.server import Call, Turn
from tests.support.backends import Backend
from tests.support.native import (
    COMPLETED,
    CREATED,
    DELTA,
    RESPONSE_OBJECT,
    check,
    completed_run,
    invoke,
    no_run_in_progress,
    usage_sum,
)
from tests.support.rag import RAG_TOOL, VACATION, VACATION_QUESTION, outputs, rag_agent, upload

STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])

ELSEWHERE = "Vacation policy of another company: unlimited vacation, no requests needed."

VACATION_SENTENCE = "Every full-time employee earns 25 days of paid vacation per year."
# No passage covers most of its words: its first retrieval scores below REFINE_BELOW.
DAYS_OFF_QUESTION = "How many days off do I get each year?"
DAYS_OFF = {"messages": [{"role": "user", "content": DAYS_OFF_QUESTION}]}
GROUNDED = "Employees earn 25 days of paid vacation per year [1]."
UNGROUNDED = "Employees get unlimited vacation and a company car."


def route(stream: bool) -> str:
    return "invoke-stream" if stream else "invoke"


@dataclass
class Search:
    query: str
    found: list[tuple[str, float]]  # (title, score), best first


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[Search]:
    """Every retrieval a run makes, with what it found."""
    seen: list[Search] = []
    original = agents.rag.finish  # a run's retrieval ends with it

    def spy(request: Any, found: Any) -> Any:
        nodes = original(request, found)
        seen.append(Search(request.query, [(n.title, n.score) for n in nodes]))
        return nodes

    monkeypatch.setattr(agents.rag, "finish", spy)
    return seen


def doc_ids(found: dict[str, Any]) -> list[str]:
    return [node["docId"] for node in found["sourceNodes"]]


def numbered_context(found: dict[str, Any]) -> str:
    """The context block as the prompt must show the sources: numbered, titled, in order."""
    titles = {str(d.pk): d.title for d in Document.objects.all()}
    return "\n\n".join(
        f"[{i}] ({titles[node['docId']]}) {node['text']}"
        for i, node in enumerate(found["sourceNodes"], 1)
    )


def requests_made(backend: Backend) -> int:
    """How many requests the fake model received."""
    assert backend.fake is not None
    return len(backend.fake.requests)


def user_text(backend: Backend, index: int) -> str:
    """The text of the last user message of the fake's request `index`."""
    [message] = [m for m in backend.body(index)["messages"] if m["role"] == "user"][-1:]
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


# ---------------------------------------------------------------- the answer and its sources


@STREAMED
def test_rag_agent_answers_the_vacation_question_with_its_sources(
    backend: Backend,
    stream: bool,
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
    model_usages: list,
) -> None:
    agent = rag_agent(make_agent, backend)
    backend.script(Turn(text=["Every full-time employee earns ", "25 days of paid vacation [1]."]))

    answer = invoke(owner_client, agent, route(stream), VACATION)

    found = outputs(answer)
    assert found["ragMode"] == "normal"
    assert answer.model == backend.model({})
    if backend.offline:
        # The local model quotes the best-matching sentences of the context.
        assert VACATION_SENTENCE in answer.text
    else:
        assert answer.text == "Every full-time employee earns 25 days of paid vacation [1]."
    handbook = corpus["handbook"]
    chunk = handbook.chunks.get()
    first = found["sourceNodes"][0]
    assert first == {
        "id": f"{handbook.pk}:{chunk.position}",
        "docId": str(handbook.pk),
        "objectId": str(handbook.pk),
        "chunkId": str(chunk.pk),
        "score": first["score"],
        "text": chunk.text,
    }
    assert "Vacation policy." in first["text"]
    scores = [node["score"] for node in found["sourceNodes"]]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[1]
    assert sorted(doc_ids(found)) == sorted(str(d.pk) for d in corpus.values())
    assert len({node["chunkId"] for node in found["sourceNodes"]}) == len(scores)

    if answer.streamed:
        kinds = [line["type"] for line in answer.lines]
        assert kinds[0] == CREATED
        assert kinds[-1] == COMPLETED
        assert set(kinds[1:-1]) == {DELTA}
    else:
        assert [item["type"] for item in answer.body["output"]] == ["message"]
    assert answer.usage == usage_sum(model_usages)
    assert len(model_usages) == 1

    if not backend.offline:
        # The prompt: the numbered passages and the question, filled into the template.
        assert requests_made(backend) == 1
        system = backend.system(0)
        assert "[1] (Employee Handbook) Employee Handbook\n\nVacation policy." in system
        assert "\n\n[2] (" in system
        assert system == DEFAULT_RAG_PROMPT.replace(
            "{context_str}", numbered_context(found)
        ).replace("{query_str}", VACATION_QUESTION)
        assert user_text(backend, 0) == VACATION_QUESTION
        assert backend.tools(0) == {}

    run = completed_run(owner_client, answer, answer.usage)
    assert run["output"] == {"answer": answer.text, "customOutputs": found}
    assert run["messages"] == [
        {"role": "user", "content": VACATION_QUESTION},
        {"role": "assistant", "content": answer.text},
    ]


def test_a_custom_prompt_gets_the_context_and_the_question(
    fake_backend: Backend, corpus: Any, make_agent: Any, owner_client: Any
) -> None:
    prompt = "Answer from these passages only.\nContext:\n{context_str}\n---\nAsked: {query_str}"
    agent = rag_agent(make_agent, fake_backend, systemPrompt=prompt, rerankerTopN=2)
    fake_backend.script(Turn(text=["25 days [1]."]))

    answer = invoke(owner_client, agent, "invoke", VACATION)

    found = outputs(answer)
    assert len(found["sourceNodes"]) == 2
    expected = prompt.replace("{context_str}", numbered_context(found))
    assert fake_backend.system(0) == expected.replace("{query_str}", VACATION_QUESTION)


def test_without_documents_the_agent_has_no_sources_and_does_not_know(
    make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent)

    answer = invoke(owner_client, agent, "invoke", VACATION)

    assert outputs(answer)["sourceNodes"] == []
    assert answer.text == "I do not know: the documents do not say."


def test_the_answer_follows_the_question_to_another_document(
    corpus: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent)
    ask = {"messages": [{"role": "user", "content": "How do I reset my password?"}]}

    answer = invoke(owner_client, agent, "invoke-stream", ask)

    assert doc_ids(outputs(answer))[0] == str(corpus["faq"].pk)
    assert "click Reset password" in answer.text


# ---------------------------------------------------------------- request overrides


@STREAMED
@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, ["handbook", "expenses", "faq"]),
        ({"hxqlQuery": "SELECT * FROM SysContent WHERE department = 'Finance'"}, ["expenses"]),
        ({"hxqlQuery": "SELECT * FROM SysContent WHERE sys_docType IN ('faq', 'policy')"}, None),
        ({"hxqlQuery": "SELECT * FROM SysContent WHERE sys_title LIKE 'Employee%'"}, ["handbook"]),
        ({"limit": 1}, ["handbook"]),
        ({"rerankerTopN": 1}, ["handbook"]),
        ({"rerankerTopN": 2}, ["handbook", "expenses"]),
        ({"hybridSearch": False, "rerankerTopN": 1}, ["handbook"]),
    ],
    ids=["none", "hxql-metadata", "hxql-doctype", "hxql-title", "limit", "top-1", "top-2", "vec"],
)
def test_request_overrides_change_the_sources(
    stream: bool,
    overrides: dict[str, Any],
    expected: list[str] | None,
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent = rag_agent(make_agent)

    answer = invoke(owner_client, agent, route(stream), {**VACATION, **overrides})

    found = doc_ids(outputs(answer))
    if expected is None:  # the two documents that are not the handbook, in either order
        assert sorted(found) == sorted(str(corpus[k].pk) for k in ("expenses", "faq"))
    else:
        assert found == [str(corpus[key].pk) for key in expected]


def test_overrides_hold_for_one_call_only(corpus: Any, make_agent: Any, owner_client: Any) -> None:
    agent = rag_agent(make_agent, rerankerTopN=2)
    only_finance = "SELECT * FROM SysContent WHERE department = 'Finance'"

    narrowed = invoke(owner_client, agent, "invoke", {**VACATION, "hxqlQuery": only_finance})
    widened = invoke(owner_client, agent, "invoke", {**VACATION, "rerankerTopN": 3})
    default = invoke(owner_client, agent, "invoke", VACATION)

    assert doc_ids(outputs(narrowed)) == [str(corpus["expenses"].pk)]
    assert VACATION_SENTENCE not in narrowed.text
    assert len(doc_ids(outputs(widened))) == 3
    assert doc_ids(outputs(default)) == [str(corpus[k].pk) for k in ("handbook", "expenses")]


def test_a_config_query_narrows_and_a_request_query_replaces_it(
    corpus: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent, hxqlQuery="SELECT * FROM SysContent WHERE department = 'HR'")
    support = {"hxqlQuery": "SELECT * FROM SysContent WHERE department = 'Support'"}

    configured = invoke(owner_client, agent, "invoke", VACATION)
    overridden = invoke(owner_client, agent, "invoke", {**VACATION, **support})

    assert doc_ids(outputs(configured)) == [str(corpus["handbook"].pk)]
    assert doc_ids(outputs(overridden)) == [str(corpus["faq"].pk)]


def test_adjacent_chunks_are_merged_into_the_source(
    env: Environment,
    admin_user: Any,
    make_agent: Any,
    owner_client: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sections = [
        f"Section {i}. " + " ".join(f"filler{i}x{j}" for j in range(30)) + "." for i in range(5)
    ]
    sections[2] += " The vacation policy grants 25 days."
    with (
        override_settings(CHUNK_TOKENS=40, CHUNK_OVERLAP=0),
        django_capture_on_commit_callbacks(execute=True),
    ):
        document = upload(env, admin_user, "Long handbook", "\n\n".join(sections))
    chunks = list(document.chunks.order_by("position"))
    hit = next(c for c in chunks if "vacation policy" in c.text)
    assert 0 < hit.position < len(chunks) - 1, "the hit must have a chunk on either side"
    agent = rag_agent(make_agent, rerankerTopN=1)

    plain = invoke(owner_client, agent, "invoke", VACATION)
    merged = invoke(
        owner_client,
        agent,
        "invoke-stream",
        {**VACATION, "adjacentChunkRange": 1, "adjacentChunkMerge": True},
    )

    [alone] = outputs(plain)["sourceNodes"]
    assert alone["text"] == hit.text
    [node] = outputs(merged)["sourceNodes"]
    assert node["chunkId"] == str(hit.pk)
    before, after = chunks[hit.position - 1], chunks[hit.position + 1]
    assert node["text"].index(before.text) < node["text"].index(hit.text)
    assert node["text"].index(hit.text) < node["text"].index(after.text)


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"hxqlQuery": "SELECT * FROM Nowhere"}, ["body", "hxqlQuery"]),
        ({"hxqlQuery": "SELECT * FROM SysContent WHERE sys_owner = 'me'"}, ["body", "hxqlQuery"]),
        ({"hxqlQuery": "DELETE FROM SysContent"}, ["body", "hxqlQuery"]),
        ({"limit": 0}, ["body", "limit"]),
        ({"rerankerTopN": 101}, ["body", "rerankerTopN"]),
        ({"adjacentChunkRange": -1}, ["body", "adjacentChunkRange"]),
        ({"hybridSearch": "sometimes"}, ["body", "hybridSearch"]),
    ],
    ids=["table", "sys-field", "delete", "limit", "top-n", "adjacent", "hybrid"],
)
def test_bad_overrides_are_refused_with_their_path(
    stream: bool,
    body: dict[str, Any],
    loc: list[str],
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent = rag_agent(make_agent)

    answer = invoke(owner_client, agent, route(stream), {**VACATION, **body})

    assert answer.status == 400, answer.body
    assert not answer.streamed
    [item] = answer.body["detail"]
    assert item["loc"] == loc
    assert item["msg"]
    no_run_in_progress()
    if loc[-1] == "hxqlQuery":
        # docs/api.md#hxql: a bad query is refused naming the position; the run opened, failed.
        assert item["type"] == "value_error"
        assert "at position" in item["msg"]
        [run] = Run.objects.filter(agent=agent)
        assert run.status == "failed"
        assert answer.headers["X-Run-Id"] == str(run.pk)
    else:  # refused with the body, before any run
        assert not Run.objects.filter(agent=agent).exists()


# ---------------------------------------------------------------- environments and status


def test_documents_of_another_environment_or_not_ready_are_never_sources(
    corpus: Any,
    env: Environment,
    other_env: Environment,
    admin_user: Any,
    make_agent: Any,
    owner_client: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        elsewhere = upload(other_env, admin_user, "Other handbook", ELSEWHERE)
        reingesting = upload(env, admin_user, "Old handbook", ELSEWHERE + " Old.")
    # Back to pending (its on-commit ingestion is never run here): chunks, but not ready.
    document_reingest(document=reingesting)
    # Uploaded but never ingested, and one whose ingestion failed.
    pending = upload(env, admin_user, "Draft handbook", ELSEWHERE + " Draft.")
    failed = upload(env, admin_user, "Broken handbook", ELSEWHERE + " Broken.")
    Document.objects.filter(pk=failed.pk).update(status="failed", error="no text")
    assert Document.objects.get(pk=elsewhere.pk).status == "ready"
    assert Document.objects.get(pk=reingesting.pk).status == "pending"
    assert reingesting.chunks.exists()
    agent = rag_agent(make_agent, rerankerTopN=100)
    hidden = {str(d.pk) for d in (elsewhere, reingesting, pending, failed)}
    # HxQL, not SQL: the platform parses it and binds every value.
    only_elsewhere = f"SELECT * FROM SysContent WHERE sys_id = '{elsewhere.pk}'"  # noqa: S608

    everything = invoke(owner_client, agent, "invoke", VACATION)
    by_id = invoke(
        owner_client,
        agent,
        "invoke-stream",
        {**VACATION, "hxqlQuery": only_elsewhere},
    )

    assert set(doc_ids(outputs(everything))) == {str(d.pk) for d in corpus.values()}
    assert not hidden & set(doc_ids(outputs(everything)))
    assert "unlimited" not in everything.text
    assert outputs(by_id)["sourceNodes"] == []
    assert by_id.text == "I do not know: the documents do not say."

    # The other environment's agent sees its own document, and only that one.
    local = {"llmModelId": "local.demo-v1"}
    theirs = make_agent("document-helper", "rag", environment=other_env, config=local)
    answer = invoke(client_for(admin_user, other_env), theirs, "invoke", VACATION)
    assert doc_ids(outputs(answer)) == [str(elsewhere.pk)]
    assert "unlimited vacation" in answer.text


# ---------------------------------------------------------------- hallucination check


@STREAMED
def test_an_ungrounded_answer_is_generated_again_once(
    fake_backend: Backend,
    stream: bool,
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
    model_usages: list,
) -> None:
    agent = rag_agent(make_agent, fake_backend, enableHallucinationCheck=True)
    fake_backend.script(
        Turn(text=[UNGROUNDED], usage=(40, 9)),
        Turn(calls=[Call(GROUNDING_TOOL, {"grounded": False, "score": 0.2})], usage=(50, 5)),
        Turn(text=[GROUNDED], usage=(45, 8)),
        Turn(calls=[Call(GROUNDING_TOOL, {"grounded": True, "score": 0.95})], usage=(52, 5)),
    )

    answer = invoke(owner_client, agent, route(stream), VACATION)

    found = outputs(answer)
    assert found["hallucinationCheck"]["grounded"] is True
    assert found["hallucinationCheck"]["score"] == 0.95
    assert answer.text == GROUNDED, "the client sees only the answer that passed"
    assert UNGROUNDED not in json.dumps(answer.lines or answer.body)
    if answer.streamed:
        # Checked before anyone sees it: the answer comes whole, in one delta.
        assert [line["type"] for line in answer.lines] == [CREATED, DELTA, COMPLETED]
    assert answer.usage == usage_sum(model_usages)
    assert answer.usage["input_tokens"] == 40 + 50 + 45 + 52

    # Two answer requests, each followed by its grounding check.
    assert requests_made(fake_backend) == 4
    forced = [fake_backend.forced_tool(i) for i in range(4)]
    assert forced == [None, GROUNDING_TOOL, None, GROUNDING_TOOL]
    assert "[1] (Employee Handbook)" in fake_backend.system(0)
    assert fake_backend.system(2).startswith(fake_backend.system(0))
    assert "previous answer" in fake_backend.system(2)[len(fake_backend.system(0)) :]
    for check_index, checked in ((1, UNGROUNDED), (3, GROUNDED)):
        asked = user_text(fake_backend, check_index)
        assert asked.endswith(f"Answer:\n{checked}")
        assert "[1] (Employee Handbook) Employee Handbook" in asked
        assert set(fake_backend.tools(check_index)) == {GROUNDING_TOOL}
    run = completed_run(owner_client, answer, answer.usage)
    assert run["output"]["customOutputs"]["hallucinationCheck"] == found["hallucinationCheck"]
    assert run["output"]["answer"] == GROUNDED


def test_a_second_ungrounded_answer_is_delivered_with_its_verdict(
    fake_backend: Backend, corpus: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent, fake_backend, enableHallucinationCheck=True)
    fake_backend.script(
        Turn(text=[UNGROUNDED]),
        Turn(calls=[Call(GROUNDING_TOOL, {"grounded": False, "score": 0.2})]),
        Turn(text=["Employees get a company car."]),
        Turn(calls=[Call(GROUNDING_TOOL, {"grounded": False, "score": 0.1})]),
    )

    answer = invoke(owner_client, agent, "invoke", VACATION)

    check = outputs(answer)["hallucinationCheck"]
    assert (check["grounded"], check["score"]) == (False, 0.1)
    assert answer.text == "Employees get a company car."
    assert requests_made(fake_backend) == 4


def test_a_grounded_first_answer_is_checked_once(
    fake_backend: Backend, corpus: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent, fake_backend, enableHallucinationCheck=True)
    fake_backend.script(
        Turn(text=[GROUNDED]),
        Turn(calls=[Call(GROUNDING_TOOL, {"grounded": True, "score": 1})]),
    )

    answer = invoke(owner_client, agent, "invoke-stream", VACATION)

    assert outputs(answer)["hallucinationCheck"] == {"grounded": True, "score": 1.0}
    assert answer.text == GROUNDED
    assert requests_made(fake_backend) == 2


@STREAMED
def test_the_offline_model_checks_its_quote_as_grounded(
    stream: bool, corpus: Any, make_agent: Any, owner_client: Any, model_usages: list
) -> None:
    agent = rag_agent(make_agent, enableHallucinationCheck=True)

    answer = invoke(owner_client, agent, route(stream), VACATION)

    found = outputs(answer)
    assert found["hallucinationCheck"] == {"grounded": True, "score": 1.0}
    assert VACATION_SENTENCE in answer.text
    assert doc_ids(found)[0] == str(corpus["handbook"].pk)
    assert len(model_usages) == 2  # the answer, then its check
    assert answer.usage == usage_sum(model_usages)


# ---------------------------------------------------------------- multihop refinement


@STREAMED
def test_a_low_scoring_question_is_rewritten_and_retrieved_again(
    fake_backend: Backend,
    stream: bool,
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
    searches: list[Search],
) -> None:
    agent = rag_agent(make_agent, fake_backend, enableMultihopQueryRefinement=True)
    fake_backend.script(Turn(text=["vacation days per year"]), Turn(text=["25 days [1]."]))

    answer = invoke(owner_client, agent, route(stream), DAYS_OFF)

    assert [s.query for s in searches] == [DAYS_OFF_QUESTION, "vacation days per year"]
    first, second = searches
    assert first.found[0][1] < REFINE_BELOW
    assert second.found[0] == ("Employee Handbook", second.found[0][1])
    assert second.found[0][1] >= REFINE_BELOW
    found = outputs(answer)
    assert doc_ids(found)[0] == str(corpus["handbook"].pk), "the better retrieval is kept"
    assert answer.text == "25 days [1]."
    # The rewrite request, then the answer request on the new context and the original question.
    assert requests_made(fake_backend) == 2
    assert fake_backend.system(0) == REFINE_PROMPT
    assert user_text(fake_backend, 0) == DAYS_OFF_QUESTION
    system = fake_backend.system(1)
    assert system.startswith(DEFAULT_RAG_PROMPT.split("{context_str}")[0])
    assert "[1] (Employee Handbook) Employee Handbook" in system
    assert system.endswith(f"Question: {DAYS_OFF_QUESTION}\nAnswer:")
    assert user_text(fake_backend, 1) == DAYS_OFF_QUESTION
    assert answer.usage["input_tokens"] == 11 * 2  # both model calls are counted


def test_a_good_first_retrieval_is_not_refined(
    fake_backend: Backend,
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
    searches: list[Search],
) -> None:
    agent = rag_agent(make_agent, fake_backend, enableMultihopQueryRefinement=True)
    fake_backend.script(Turn(text=["25 days [1]."]))

    answer = invoke(owner_client, agent, "invoke", VACATION)

    assert [s.query for s in searches] == [VACATION_QUESTION]
    assert requests_made(fake_backend) == 1
    assert doc_ids(outputs(answer))[0] == str(corpus["handbook"].pk)


def test_a_rewrite_that_finds_worse_passages_keeps_the_first(
    fake_backend: Backend,
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
    searches: list[Search],
) -> None:
    agent = rag_agent(make_agent, fake_backend, enableMultihopQueryRefinement=True)
    fake_backend.script(
        Turn(text=["zebra migration"]), Turn(text=["okapi"]), Turn(text=["I do not know."])
    )

    answer = invoke(owner_client, agent, "invoke", DAYS_OFF)

    assert [s.query for s in searches] == [DAYS_OFF_QUESTION, "zebra migration", "okapi"]
    first = [title for title, _ in searches[0].found]
    titles = {str(d.pk): d.title for d in corpus.values()}
    assert [titles[d] for d in doc_ids(outputs(answer))] == first
    assert [fake_backend.system(i) for i in (0, 1)] == [REFINE_PROMPT] * 2


def test_the_offline_model_refines_too(
    corpus: Any, make_agent: Any, owner_client: Any, searches: list[Search]
) -> None:
    agent = rag_agent(make_agent, enableMultihopQueryRefinement=True)

    answer = invoke(owner_client, agent, "invoke-stream", DAYS_OFF)

    assert searches[0].query == DAYS_OFF_QUESTION
    assert len(searches) >= 2, "a low-scoring first retrieval is tried again"
    # The offline model's rewrite: the question's content words.
    assert searches[1].query == "many days off get each year"
    assert outputs(answer)["ragMode"] == "normal"
    assert "25 days of paid vacation" in answer.text


# ---------------------------------------------------------------- the rag tool of a tool agent


@STREAMED
def test_a_tool_agent_searches_with_its_rag_tool(
    backend: Backend,
    stream: bool,
    corpus: Any,
    make_agent: Any,
    owner_client: Any,
    searches: list[Search],
    model_usages: list,
) -> None:
    config = backend.config({"llmModelId": "local.demo-v1", "tools": [RAG_TOOL]})
    agent = make_agent("researcher", "tool", config=config)
    backend.script(
        Turn(calls=[Call("search_documents", {"query": "vacation policy"})]),
        Turn(text=["You earn 25 days of paid vacation a year."]),
    )
    # The offline model picks the tool by its words and takes the quoted text as the query.
    ask = {"messages": [{"role": "user", "content": 'Search the documents for "vacation policy"'}]}

    answer = invoke(owner_client, agent, route(stream), ask)

    assert answer.status == 200
    if not answer.streamed:
        check(answer.body, RESPONSE_OBJECT)
    [call] = answer.calls
    assert (call["name"], call["arguments"]) == ("search_documents", {"query": "vacation policy"})
    assert [s.query for s in searches] == ["vacation policy"]
    assert "25 days" in answer.final_text
    assert answer.usage == usage_sum(model_usages)

    run = completed_run(owner_client, answer, answer.usage)
    assert [m["role"] for m in run["messages"]] == ["user", "assistant", "tool", "assistant"]
    tool_message = run["messages"][2]
    assert tool_message["tool_call_id"] == call["id"]
    assert tool_message["name"] == "search_documents"
    nodes = json.loads(tool_message["content"])
    assert len(nodes) == RAG_TOOL["semanticSearchConfig"]["rerankerTopN"]
    handbook = corpus["handbook"]
    assert nodes[0] == {
        "id": f"{handbook.pk}:0",
        "docId": str(handbook.pk),
        "objectId": str(handbook.pk),
        "chunkId": str(handbook.chunks.get().pk),
        "score": nodes[0]["score"],
        "text": handbook.chunks.get().text,
        "title": "Employee Handbook",
    }
    assert run["output"] == answer.final_text

    if not backend.offline:
        parameters = backend.tools(0)["search_documents"]
        assert parameters["required"] == ["query"]
        [result] = backend.tool_results(1).values()
        assert json.loads(result) == nodes


def test_the_rag_tool_searches_with_its_own_config(
    corpus: Any, make_agent: Any, owner_client: Any
) -> None:
    only_faq = "SELECT * FROM SysContent WHERE sys_docType = 'faq'"
    # minScore 0: the FAQ says nothing of vacations, and is found all the same.
    tool = {**RAG_TOOL, "semanticSearchConfig": {"hxqlQuery": only_faq, "minScore": 0}}
    agent = make_agent(
        "researcher", "tool", config={"llmModelId": "local.demo-v1", "tools": [tool]}
    )
    ask = {"messages": [{"role": "user", "content": 'Search the documents for "vacation policy"'}]}

    answer = invoke(owner_client, agent, "invoke", ask)

    run = completed_run(owner_client, answer, answer.usage)
    nodes = json.loads(run["messages"][2]["content"])
    assert [n["docId"] for n in nodes] == [str(corpus["faq"].pk)]
