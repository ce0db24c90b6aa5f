"""Trace ids in log lines (agents.telemetry.logs): a line logged by a run's work names the
run's trace and span, the ones its answer's `traceparent` names; a tool call's work, the
tool call's span; a line outside any trace, none."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import override_settings
from django.utils.module_loading import import_string

from agents.examples import CALCULATOR
from agents.runtime.trace import Trace
from agents.runtime.tracecontext import RunTrace, SpanRef, running
from agents.telemetry.logs import TraceIds
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Fail, Turn
from tests.support.backends import bedrock_server, openai_server  # noqa: F401 (fixtures)
from tests.support.telemetry import PARENT_ID, TRACE_ID, TRACEPARENT

HAIKU, MINI = "anthropic.claude-3-haiku-20240307-v1:0", "openai/gpt-4o-mini"


@pytest.fixture
def lines(settings: Any) -> Iterator[Callable[[], list[str]]]:
    """The lines the console handler of settings.LOGGING writes, as it writes them."""
    config = settings.LOGGING
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    for name in config["handlers"]["console"]["filters"]:
        handler.addFilter(import_string(config["filters"][name]["()"])())
    formatter = config["formatters"][config["handlers"]["console"]["formatter"]]
    handler.setFormatter(logging.Formatter(formatter["format"]))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: stream.getvalue().splitlines()
    finally:
        root.removeHandler(handler)


def ids_of(record: logging.LogRecord) -> tuple[str, str]:
    TraceIds().filter(record)
    return record.trace_id, record.span_id


def a_record() -> logging.LogRecord:
    return logging.LogRecord("agents.test", logging.INFO, __file__, 1, "said", (), None)


def test_the_span_is_the_most_precise_one_running_here() -> None:
    run = RunTrace.under(SpanRef(int(TRACE_ID, 16), int(PARENT_ID, 16)))
    trace = Trace(run)
    tool = trace.start("tool_call")

    outside = ids_of(a_record())
    token = running.set(run)
    try:
        in_the_run = ids_of(a_record())
        with trace.within(tool):
            in_its_tool_call = ids_of(a_record())
    finally:
        running.reset(token)

    assert outside == ("0", "0")
    assert in_the_run == (TRACE_ID, f"{run.span_id:016x}")
    assert in_its_tool_call == (TRACE_ID, f"{tool.span_id:016x}")
    given = a_record()
    given.trace_id, given.span_id = "a", "b"  # logged with `extra`: kept
    assert ids_of(given) == ("a", "b")


@pytest.mark.django_db
def test_a_line_a_run_logs_names_the_span_its_answer_names(
    bedrock_server: FakeBedrock,  # noqa: F811
    openai_server: FakeOpenAI,  # noqa: F811
    make_agent: Any,
    owner_client: Any,
    lines: Callable[[], list[str]],
) -> None:
    # Its first model is throttled: the run logs that it tries the next one.
    config = dict(
        CALCULATOR["config"],
        llmModelId=HAIKU,
        fallbackModels=[MINI],
        inferenceConfig={"maxTokens": 4000, "maxRetries": 0, "timeout": 5},
    )
    agent = make_agent("Calculator", "tool", config=config)
    bedrock_server.reset()
    openai_server.reset()
    bedrock_server.fail_model(HAIKU, Fail(429, "Too many requests, please wait"))
    openai_server.script(Turn(text=["15."]))
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"

    with override_settings(LLM_OFFLINE=False):
        answer = owner_client.post(
            url,
            {"messages": [{"role": "user", "content": "3x5?"}]},
            format="json",
            HTTP_TRACEPARENT=TRACEPARENT,
        )
    bedrock_server.reset()
    openai_server.reset()

    assert answer.status_code == 200, answer.content
    span = SpanRef.parse(answer["traceparent"])
    assert span is not None
    (line,) = [line for line in lines() if "trying" in line]
    assert line.startswith(
        f"WARNING [agents.runtime.model_step] [trace_id={TRACE_ID} span_id={span.span_id:016x}] "
        f"model {HAIKU} failed, trying {MINI}"
    )
