"""A run's events as MCP results (agents.protocols.mcp_server.encoder), without a server."""

from __future__ import annotations

import uuid

from agentbuilder.errors import ErrorItem, Invalid
from agents.llm.base import Usage
from agents.protocols.mcp_server.encoder import ResultEncoder, invalid_result
from agents.runtime.events import Intervention, ResponseCompleted, ResponseFailed, TextDelta

RUN = uuid.UUID("00000000-0000-0000-0000-000000000001")


def encoder(thread_id: str = "") -> ResultEncoder:
    return ResultEncoder(RUN, "calc@2", thread_id)


def test_progress_counts_the_characters_streamed_and_carries_each_delta() -> None:
    coder = encoder()
    steps = [coder.progress(TextDelta(text)) for text in ("The answer", "", " is 15.")]
    assert steps == [(10.0, "The answer"), None, (17.0, " is 15.")]


def test_a_text_answer_is_text_content_with_the_run_in_meta() -> None:
    result = encoder("t-1").result(ResponseCompleted(Usage(3, 4), text="15"))
    assert not result.is_error
    assert [block.text for block in result.content] == ["15"]  # type: ignore[union-attr]
    assert result.structured_content is None
    assert result.meta == {
        "agentbuilder/runId": str(RUN),
        "agentbuilder/answeredBy": "calc@2",
        "agentbuilder/threadId": "t-1",
    }


def test_a_structured_answer_is_also_structured_content() -> None:
    task = ResponseCompleted(Usage(), text='{"summary": "s"}', structured={"summary": "s"})
    as_object = ResponseCompleted(Usage(), structured={"name": "Ada"}, object_answer=True)
    assert encoder().result(task).structured_content == {"summary": "s"}
    result = encoder().result(as_object)
    assert result.structured_content == {"name": "Ada"}
    assert result.content[0].text == '{"name": "Ada"}'  # type: ignore[union-attr]


def test_a_rag_answer_carries_its_sources_as_structured_content() -> None:
    nodes = [{"docId": "d1", "text": "Paris is in France.", "score": 0.9}]
    event = ResponseCompleted(Usage(), text="Paris.", custom_outputs={"sourceNodes": nodes})
    result = encoder().result(event)
    assert result.structured_content == {"answer": "Paris.", "sources": nodes}
    assert result.meta is not None
    assert result.meta["agentbuilder/customOutputs"] == {"sourceNodes": nodes}


def test_a_guardrail_block_is_a_normal_answer_with_its_message() -> None:
    block = Intervention("HAIP-Profanity", "output", "Sorry, I can't answer that.")
    event = ResponseCompleted(Usage(), text="", structured={"x": 1}, intervention=block)
    result = encoder().result(event)
    assert not result.is_error
    assert result.content[0].text == "Sorry, I can't answer that."  # type: ignore[union-attr]
    assert result.structured_content is None  # the blocked object never leaves
    assert result.meta is not None
    guardrail = result.meta["agentbuilder/customOutputs"]["guardrail"]
    assert guardrail == {"action": "BLOCKED", "name": "HAIP-Profanity", "stage": "output"}


def test_a_failed_run_is_an_error_result_with_its_code() -> None:
    result = encoder().result(ResponseFailed("provider_error", "the model is down"))
    assert result.is_error
    assert result.structured_content == {
        "error": {"code": "provider_error", "message": "the model is down"}
    }
    assert "provider_error" in result.content[0].text  # type: ignore[union-attr]
    assert result.meta is not None
    assert result.meta["agentbuilder/runId"] == str(RUN)


def test_a_stream_without_an_end_is_an_error_result() -> None:
    assert encoder().result(None).is_error


def test_bad_arguments_name_each_field() -> None:
    problems = Invalid(
        [
            ErrorItem(("arguments", "text"), "Field required", "missing"),
            ErrorItem(("arguments", "items", 2), "not a string"),
        ]
    )
    result = invalid_result(problems)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "arguments.text: Field required" in text
    assert "arguments.items.2: not a string" in text
    details = result.structured_content["error"]["details"]
    assert [d["loc"] for d in details] == [["arguments", "text"], ["arguments", "items", 2]]
