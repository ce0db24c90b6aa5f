"""Images and documents reach the providers that read them, in each wire format: Converse
image and document blocks through the real boto3 (whose parameter validation checks them
against the service model), OpenAI `image_url` parts through the real `openai` SDK."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from agents.llm.base import Attachment, Message, ModelRequest, ProviderEvent, TextChunk
from agents.llm.bedrock import BedrockProvider
from agents.llm.openai import OpenAIProvider
from tests.fakes.bedrock import FakeBedrock, bedrock_environment
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF"
IMAGE = Attachment("image", "image/png", PNG)
REPORT = Attachment("document", "application/pdf", PDF, name="Q3 report: final?.pdf")


@pytest.fixture(scope="module")
def bedrock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeBedrock]:
    with bedrock_environment(tmp_path_factory.mktemp("aws")) as fake:
        yield fake


@pytest.fixture(scope="module")
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        for name, value in (("OPENAI_BASE_URL", fake.base_url), ("OPENAI_API_KEY", "sk-test")):
            patch.setenv(name, value)
            patch.setattr(settings, name, value, raising=False)
        yield fake


def request(model: str, *attachments: Attachment) -> ModelRequest:
    message = Message("user", "What is in these?", attachments=attachments)
    return ModelRequest(model, "", (message,), max_retries=0, timeout=5.0)


def collect(provider: Any, model_request: ModelRequest) -> list[ProviderEvent]:
    async def run() -> list[ProviderEvent]:
        return [event async for event in provider.stream(model_request)]

    return asyncio.run(run())


def test_converse_gets_an_image_block_and_a_named_document_block(bedrock: FakeBedrock) -> None:
    bedrock.reset()
    bedrock.script(Turn(text=["A chart."]))

    events = collect(
        BedrockProvider(), request("anthropic.claude-3-haiku-20240307-v1:0", IMAGE, REPORT)
    )

    assert [e.text for e in events if isinstance(e, TextChunk)] == ["A chart."]
    [body] = bedrock.bodies
    [message] = body["messages"]
    text, image, document = message["content"]
    assert text == {"text": "What is in these?"}
    # boto3 sends blobs base64-encoded in Converse's JSON.
    assert image == {
        "image": {"format": "png", "source": {"bytes": base64.b64encode(PNG).decode()}}
    }
    assert document["document"]["format"] == "pdf"
    assert document["document"]["name"] == "Q3 report final (2)"
    assert base64.b64decode(document["document"]["source"]["bytes"]) == PDF


def test_openai_gets_the_image_as_a_data_url_part(openai_fake: FakeOpenAI) -> None:
    openai_fake.reset()
    openai_fake.script(Turn(text=["A logo."]))

    collect(OpenAIProvider(), request("openai/gpt-4o-mini", IMAGE))

    [body] = openai_fake.bodies
    user = body["messages"][-1]
    assert user["role"] == "user"
    assert user["content"] == [
        {"type": "text", "text": "What is in these?"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
        },
    ]


def test_a_message_without_attachments_stays_plain_text(openai_fake: FakeOpenAI) -> None:
    openai_fake.reset()
    openai_fake.script(Turn(text=["Hi."]))

    collect(OpenAIProvider(), request("openai/gpt-4o-mini"))

    assert openai_fake.bodies[0]["messages"][-1] == {
        "role": "user",
        "content": "What is in these?",
    }
