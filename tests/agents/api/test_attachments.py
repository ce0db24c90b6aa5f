"""Images and documents in messages: accepted where the agent's model reads them, recorded
on the run, and refused with a 400 that names the part where it cannot, on every protocol
that carries them."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.test import override_settings

from agents.examples import CALCULATOR
from agents.models import Agent, Run
from tests.support.native import invoke

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(60))
PDF = b"%PDF-1.4\n%%EOF\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image_part(data: bytes = PNG, media_type: str = "image/png") -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "mediaType": media_type, "data": b64(data)},
    }


def document_part(name: str = "report.pdf") -> dict[str, Any]:
    source = {"type": "base64", "mediaType": "application/pdf", "data": b64(PDF)}
    return {"type": "document", "name": name, "source": source}


def asking(*parts: dict[str, Any]) -> dict[str, Any]:
    content = [{"type": "text", "text": "What do you see?"}, *parts]
    return {"messages": [{"role": "user", "content": content}]}


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def test_an_image_and_a_document_reach_the_offline_model_and_the_run_records_them(
    owner_client: Any, calculator: Agent
) -> None:
    answer = invoke(owner_client, calculator, "invoke", asking(image_part(), document_part()))

    assert answer.status == 200, answer.body
    # The offline model says what it received.
    assert f"{len(PNG)} bytes" in answer.final_text
    run = Run.objects.get(pk=answer.run_id)
    assert run.status == "completed"
    assert run.messages[0]["content"] == "What do you see?"
    assert run.messages[0]["attachments"] == [
        {"type": "image", "mediaType": "image/png", "name": "", "bytes": len(PNG)},
        {
            "type": "document",
            "mediaType": "application/pdf",
            "name": "report.pdf",
            "bytes": len(PDF),
        },
    ]


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (
            {"type": "image", "source": {"type": "base64", "mediaType": "image/png", "data": "%%"}},
            "base64",
        ),
        (image_part(media_type="image/tiff"), "image/tiff"),
        (image_part(data=b""), "empty"),
    ],
)
def test_a_malformed_part_is_a_400_at_its_place_and_nothing_runs(
    owner_client: Any, calculator: Agent, part: dict[str, Any], message: str
) -> None:
    answer = invoke(owner_client, calculator, "invoke", asking(part))

    assert answer.status == 400
    [item] = answer.body["detail"]
    assert item["loc"] == ["body", "messages", 0, "content", 1]
    assert message in item["msg"]
    assert not Run.objects.exists()


def test_an_assistant_message_cannot_carry_an_image(owner_client: Any, calculator: Agent) -> None:
    body = {
        "messages": [
            {"role": "assistant", "content": [image_part()]},
            {"role": "user", "content": "And now?"},
        ]
    }
    answer = invoke(owner_client, calculator, "invoke", body)

    assert answer.status == 400
    assert answer.body["detail"][0]["loc"] == ["body", "messages", 0, "content"]


@pytest.mark.parametrize(
    ("model_id", "part", "kind"),
    [
        ("openai/gpt-4o-mini", document_part(), "documents"),
        ("amazon.nova-micro-v1:0", image_part(), "images"),
    ],
)
def test_a_part_the_model_cannot_read_is_a_400_naming_it(
    owner_client: Any, make_agent: Any, model_id: str, part: dict[str, Any], kind: str
) -> None:
    agent = make_agent("reader", config={**CALCULATOR["config"], "llmModelId": model_id})

    with override_settings(LLM_OFFLINE=False):
        answer = invoke(owner_client, agent, "invoke", asking(part))

    assert answer.status == 400
    [item] = answer.body["detail"]
    assert item["loc"] == ["body", "messages", 0, "content", 1]
    assert item["msg"] == f"the model '{model_id}' cannot read {kind}"
    run = Run.objects.get()
    assert (run.status, run.error["code"]) == ("failed", "invalid_request")


def test_chat_completions_take_a_data_url_image_and_refuse_a_remote_one(
    owner_client: Any, calculator: Agent
) -> None:
    url = f"/v1/agents/{calculator.pk}/versions/latest/chat/completions"
    data_url = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}}
    remote = {"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/cat.png"}}

    taken = owner_client.post(
        url, {"messages": [{"role": "user", "content": [data_url]}]}, format="json"
    )
    refused = owner_client.post(
        url,
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, remote]}]},
        format="json",
    )

    assert taken.status_code == 200, taken.json()
    assert f"{len(PNG)} bytes" in taken.json()["choices"][0]["message"]["content"]
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["param"] == "messages[0].content[1].image_url.url"
    assert "does not fetch URLs" in error["message"]


def test_process_takes_an_image_content_as_a_data_url(owner_client: Any, calculator: Agent) -> None:
    url = f"/v1/agents/{calculator.pk}/versions/latest/process"
    content = [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "image_url": f"data:image/png;base64,{b64(PNG)}"},
    ]
    body = {"input": [{"type": "message", "role": "user", "content": content}], "stream": False}

    answer = owner_client.post(url, body, format="json")
    remote = owner_client.post(
        url,
        {
            **body,
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{**content[1], "image_url": "file:///etc/passwd"}],
                }
            ],
        },
        format="json",
    )

    assert answer.status_code == 200, answer.content
    run = Run.objects.get(pk=answer["X-Run-Id"])
    assert run.messages[0]["attachments"][0]["bytes"] == len(PNG)
    assert remote.status_code == 400
