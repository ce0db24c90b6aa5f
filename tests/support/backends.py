"""The model backends a test runs an agent on: `offline` (LLM_OFFLINE, the local model),
`bedrock` (the real boto3 against the fake Bedrock) and `openai` (the real `openai` SDK against
the fake OpenAI server). A test scripts the fakes' turns; the offline model answers by itself.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import override_settings

from agents.llm.base import Finished, Usage
from agents.llm.bedrock import BedrockProvider
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.llm.local import LocalModel
from agents.llm.openai import OpenAIProvider
from tests.fakes.bedrock import FakeBedrock, bedrock_environment
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import FakeServer, Script

PROVIDERS = ("offline", "bedrock", "openai")
FAKES = ("bedrock", "openai")
MODELS = {"bedrock": "anthropic.claude-3-haiku-20240307-v1:0", "openai": "openai/gpt-4o-mini"}


@dataclass
class Backend:
    name: str
    fake: FakeServer | None = None

    @property
    def offline(self) -> bool:
        return self.fake is None

    def config(self, config: dict[str, Any], **changes: Any) -> dict[str, Any]:
        """A copy of `config` on this backend's model, with `changes` to its top level."""
        result = copy.deepcopy(config) | changes
        if not self.offline:
            result["llmModelId"] = MODELS[self.name]
        return result

    def model(self, config: dict[str, Any]) -> str:
        """The model the answers report."""
        return LOCAL_MODEL if self.offline else MODELS[self.name]

    def script(self, *turns: Script) -> None:
        if self.fake is not None:
            self.fake.script(*turns)

    # What the fake received, in either wire format.

    def body(self, index: int) -> dict[str, Any]:
        assert self.fake is not None
        return self.fake.bodies[index]

    def tool_results(self, index: int) -> dict[str, str]:
        """call id → result text of the tool results sent in request `index`."""
        messages = self.body(index)["messages"]
        if self.name == "bedrock":
            return {
                block["toolResult"]["toolUseId"]: "".join(
                    part.get("text", "") for part in block["toolResult"]["content"]
                )
                for message in messages
                for block in message["content"]
                if "toolResult" in block
            }
        return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}

    def tools(self, index: int) -> dict[str, dict[str, Any]]:
        """tool name → parameter schema offered in request `index`."""
        body = self.body(index)
        if self.name == "bedrock":
            specs = [t["toolSpec"] for t in body.get("toolConfig", {}).get("tools", [])]
            return {s["name"]: s["inputSchema"]["json"] for s in specs}
        return {t["function"]["name"]: t["function"]["parameters"] for t in body.get("tools", [])}

    def forced_tool(self, index: int) -> str | None:
        body = self.body(index)
        if self.name == "bedrock":
            return body.get("toolConfig", {}).get("toolChoice", {}).get("tool", {}).get("name")
        choice = body.get("tool_choice")
        return choice["function"]["name"] if isinstance(choice, dict) else None

    def system(self, index: int) -> str:
        body = self.body(index)
        if self.name == "bedrock":
            return "".join(part["text"] for part in body.get("system", []))
        first = body["messages"][0]
        return first["content"] if first["role"] == "system" else ""


@pytest.fixture(scope="package")
def bedrock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeBedrock]:
    with bedrock_environment(tmp_path_factory.mktemp("aws")) as fake:
        yield fake


@pytest.fixture(scope="package")
def openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", fake.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        yield fake


def _backend(request: pytest.FixtureRequest, name: str) -> Iterator[Backend]:
    if name == "offline":
        yield Backend(name)
        return
    server: FakeServer = request.getfixturevalue(f"{name}_server")
    server.reset()
    with override_settings(LLM_OFFLINE=False):
        yield Backend(name, server)
    server.reset()


@pytest.fixture(params=PROVIDERS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from _backend(request, request.param)


@pytest.fixture(params=FAKES)
def fake_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from _backend(request, request.param)


@pytest.fixture
def model_usages(monkeypatch: pytest.MonkeyPatch) -> list[Usage]:
    """The usage every model call reported, whichever provider served it."""
    usages: list[Usage] = []
    for provider in (LocalModel, BedrockProvider, OpenAIProvider):
        original = provider.stream

        async def spy(self: Any, request: Any, _original: Any = original) -> AsyncIterator[Any]:
            async for event in _original(self, request):
                if isinstance(event, Finished):
                    usages.append(event.usage)
                yield event

        monkeypatch.setattr(provider, "stream", spy)
    return usages
