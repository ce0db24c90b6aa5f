"""The OpenAI Agents SDK (`openai-agents`) as its users write it, against `/v1/openai`.

Its import name is `agents`, like this project's app: it cannot load in the test process.
The test runs this file with `python -I` (no working directory, no PYTHONPATH on the path)
and the SDK from its own directory (`OPENAI_AGENTS_PATH`, see requirements-clients.txt),
and reads one JSON object from its output.

    python -I openai_agents_client.py BASE_URL TOKEN MODEL SCENARIO
"""

import asyncio
import json
import os
import sys

sys.path.insert(0, os.environ["OPENAI_AGENTS_PATH"])

from openai import AsyncOpenAI

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)

set_tracing_disabled(True)  # the SDK would export traces to api.openai.com
WEATHER_CALLS: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    WEATHER_CALLS.append(city)
    return f"sunny, 21 C in {city}"


async def main(base_url: str, token: str, model: str, scenario: str) -> dict:
    client = AsyncOpenAI(base_url=base_url, api_key=token, max_retries=0, timeout=60)
    tools = [] if scenario == "server_tool_only" else [get_weather]
    agent = Agent(
        name="calc",
        instructions="Answer briefly.",
        model=OpenAIChatCompletionsModel(model=model, openai_client=client),
        tools=tools,
    )
    question = (
        'What is the weather in "Paris"?' if scenario == "client_tool" else "What is 12 times 11?"
    )
    ran = await Runner.run(agent, question)
    streamed = Runner.run_streamed(agent, question)
    kinds = []
    async for event in streamed.stream_events():
        kinds.append(event.type)
    return {
        "run": ran.final_output,
        "run_items": [item.type for item in ran.new_items],
        "streamed": streamed.final_output,
        "streamed_items": [item.type for item in streamed.new_items],
        "event_kinds": sorted(set(kinds)),
        "weather_calls": WEATHER_CALLS,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:5]))))
