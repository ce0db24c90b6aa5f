"""Agent frameworks over `/v1/openai` (docs/api.md#openai), installed from the registries and
used as their documentation shows, against a live uvicorn: the OpenAI Agents SDK,
LangChain's ChatOpenAI and pydantic-ai.

The agent is the calculator, whose `multiply` runs on the server; the client's tool is
`get_weather`, which the offline model calls when asked about the weather with a quoted
city (it picks tools by the words of their names and descriptions)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ToolCallPart, ToolReturnPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agents.access.tokens import token_encode
from agents.examples import CALCULATOR
from agents.models import Agent, Run
from tests.live import django_port  # noqa: F401 (the fixture `port`)

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
MULTIPLY = "What is 12 times 11?"
WEATHER = 'What is the weather in "Paris"?'
CLIENT = Path(__file__).with_name("openai_agents_client.py")
OPENAI_AGENTS = Path(settings.BASE_DIR) / "var" / "clients" / "openai-agents"
# A subprocess that talks to the live server; a loaded machine gets this much to finish.
SUBPROCESS_DEADLINE = 300


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("calculator", "tool", config=CALCULATOR["config"])


@pytest.fixture
def base(port: int, owner: Any) -> tuple[str, str]:
    """(base_url, api_key) of the owner."""
    return f"http://127.0.0.1:{port}/v1/openai", token_encode(
        user_id=owner.pk, environment_id=None
    )[0]


def get_weather_result(city: str) -> str:
    return f"sunny, 21 C in {city}"


# ---------------------------------------------------------------- openai-agents


def openai_agents(base: tuple[str, str], scenario: str) -> dict[str, Any]:
    if not (OPENAI_AGENTS / "agents").is_dir():
        pytest.fail(f"openai-agents is not installed in {OPENAI_AGENTS}: run make .venv")
    done = subprocess.run(  # noqa: S603 (our interpreter, our script)
        [sys.executable, "-I", str(CLIENT), *base, "calculator", scenario],
        env={**os.environ, "OPENAI_AGENTS_PATH": str(OPENAI_AGENTS)},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@LIVE
@pytest.mark.parametrize("scenario", ["server_tool_only", "server_tool_with_client_tool"])
def test_openai_agents_runs_and_streams_an_agent_whose_tool_runs_on_the_server(
    base: tuple[str, str], calculator: Agent, scenario: str
) -> None:
    result = openai_agents(base, scenario)

    assert "132" in result["run"]
    assert result["streamed"] == result["run"]
    # The server's multiply is no tool call of the client's: one message, nothing to run.
    assert result["run_items"] == result["streamed_items"] == ["message_output_item"]
    assert result["weather_calls"] == []


@LIVE
def test_openai_agents_runs_the_client_tool_the_agents_model_calls(
    base: tuple[str, str], calculator: Agent
) -> None:
    result = openai_agents(base, "client_tool")

    expected = ["tool_call_item", "tool_call_output_item", "message_output_item"]
    assert result["run_items"] == result["streamed_items"] == expected
    assert result["weather_calls"] == ["Paris", "Paris"]  # once per run
    assert get_weather_result("Paris") in result["run"]
    assert result["streamed"] == result["run"]
    # Each run is two completions: the call, then the answer from the client's result.
    runs = Run.objects.filter(agent=calculator).order_by("started_at")
    assert [r.status for r in runs] == ["completed"] * 4
    waiting = runs[0]
    assert waiting.output["tool_calls"][0]["function"]["name"] == "get_weather"


# ---------------------------------------------------------------- langchain-openai


def chat_openai(base: tuple[str, str]) -> ChatOpenAI:
    return ChatOpenAI(model="calculator", base_url=base[0], api_key=base[1], max_retries=0)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return get_weather_result(city)


@LIVE
def test_langchain_invoke_stream_and_astream_give_the_same_answer(
    base: tuple[str, str], calculator: Agent
) -> None:
    llm = chat_openai(base)

    invoked = llm.invoke(MULTIPLY)
    chunks = list(llm.stream(MULTIPLY))

    async def astream() -> list[Any]:
        return [chunk async for chunk in llm.astream(MULTIPLY)]

    achunks = asyncio.run(astream())
    assert "132" in str(invoked.content)
    assert invoked.tool_calls == []
    for streamed in (chunks, achunks):
        joined = streamed[0]
        for chunk in streamed[1:]:
            joined += chunk
        assert joined.content == invoked.content  # no tool result glued in front
        assert joined.tool_calls == []
        assert joined.response_metadata["finish_reason"] == "stop"


@LIVE
@pytest.mark.parametrize("stream", [False, True])
def test_langchain_bind_tools_goes_through_a_client_tool_round_trip(
    base: tuple[str, str], calculator: Agent, stream: bool
) -> None:
    llm = chat_openai(base).bind_tools([get_weather])
    history: list[Any] = [HumanMessage(WEATHER)]

    def ask() -> AIMessage:
        if not stream:
            return llm.invoke(history)  # type: ignore[return-value]
        chunks = list(llm.stream(history))
        joined = chunks[0]
        for chunk in chunks[1:]:
            joined += chunk
        return AIMessage(content=joined.content, tool_calls=joined.tool_calls)  # type: ignore[attr-defined]

    asked = ask()
    [call] = asked.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    history += [asked, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    answered = ask()

    assert answered.tool_calls == []
    assert get_weather_result("Paris") in str(answered.content)


# ---------------------------------------------------------------- pydantic-ai


def pydantic_agent(base: tuple[str, str], *, client_tool: bool = False) -> PydanticAgent:
    model = OpenAIChatModel(
        "calculator", provider=OpenAIProvider(base_url=base[0], api_key=base[1])
    )
    agent: PydanticAgent = PydanticAgent(model)
    if client_tool:

        @agent.tool_plain
        def get_weather(city: str) -> str:
            """The weather in a city."""
            return get_weather_result(city)

    return agent


@LIVE
def test_pydantic_ai_run_and_run_stream_give_the_same_answer_with_one_request(
    base: tuple[str, str], calculator: Agent
) -> None:
    agent = pydantic_agent(base)

    async def both() -> tuple[Any, str]:
        ran = await agent.run(MULTIPLY)
        async with agent.run_stream(MULTIPLY) as streamed:
            text = await streamed.get_output()
        return ran, text

    ran, streamed_text = asyncio.run(both())

    assert "132" in ran.output
    assert streamed_text == ran.output
    assert ran.usage.requests == 1  # nothing for the client to run: no second request
    assert Run.objects.filter(agent=calculator).count() == 2


@LIVE
def test_pydantic_ai_runs_the_client_tool(base: tuple[str, str], calculator: Agent) -> None:
    agent = pydantic_agent(base, client_tool=True)

    ran = asyncio.run(agent.run(WEATHER))

    parts = [part for message in ran.all_messages() for part in message.parts]
    [call] = [p for p in parts if isinstance(p, ToolCallPart)]
    [result] = [p for p in parts if isinstance(p, ToolReturnPart)]
    assert (call.tool_name, call.args_as_dict()) == ("get_weather", {"city": "Paris"})
    assert result.content == get_weather_result("Paris")
    assert get_weather_result("Paris") in ran.output
    assert ran.usage.requests == 2


# ---------------------------------------------------------------- the README's snippet


def readme_snippet() -> tuple[str, str]:
    """(code, the output it shows) of the README's section on agent frameworks."""
    readme = (Path(settings.BASE_DIR) / "README.md").read_text()
    section = readme.split("## Agent frameworks over /v1/openai\n", 1)[1].split("\n## ", 1)[0]
    blocks = section.split("```")
    code = blocks[1].removeprefix("python\n")
    shown = blocks[3].removeprefix("\n")  # the plain block after the code
    return code, shown


@LIVE
def test_the_readmes_openai_agents_snippet_runs_as_shown(
    base: tuple[str, str], make_agent: Any
) -> None:
    make_agent("Calculator", "tool", config=CALCULATOR["config"])
    code, shown = readme_snippet()
    assert 'base_url="http://localhost:8000/v1/openai"' in code
    code = code.replace("http://localhost:8000/v1/openai", base[0])
    prelude = f"import sys; sys.path.insert(0, {str(OPENAI_AGENTS)!r})\n"

    done = subprocess.run(  # noqa: S603 (our interpreter, the README's code)
        [sys.executable, "-I", "-c", prelude + code],
        env={**os.environ, "TOKEN": base[1]},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_DEADLINE,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == shown
