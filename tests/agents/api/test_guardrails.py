"""Guardrails end to end (docs/api.md#guardrails): input blocked before any model call, output
blocked before the client sees it, the run records the intervention."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from agents.examples import CALCULATOR
from agents.models import Run
from guardrails.models import DEFAULT_BLOCKED_INPUT, DEFAULT_BLOCKED_OUTPUT, Guardrail
from tests.fakes.server import Call, Turn
from tests.support.backends import Backend
from tests.support.guardrails import ATTACK, ATTACK_DETECTED, PROFANE_SPLIT, agent_with, ask
from tests.support.native import invoke


def guardrail_of(answer: Any) -> dict[str, Any]:
    if answer.streamed:
        assert answer.lines[-1]["type"] == "response.completed"
        return answer.lines[-1]["response"]["customOutputs"]["guardrail"]
    return answer.body["customOutputs"]["guardrail"]


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_prompt_attack_is_blocked_before_any_model_call(
    owner_client, make_agent, fake_backend: Backend, stream: bool
):
    agent = agent_with(make_agent, fake_backend, "HAIP-Prompt_attack-Medium")
    answer = invoke(owner_client, agent, "invoke-stream" if stream else "invoke", ask(ATTACK))
    assert answer.status == 200
    assert answer.text == DEFAULT_BLOCKED_INPUT
    assert guardrail_of(answer) == {
        "action": "BLOCKED",
        "name": "HAIP-Prompt_attack-Medium",
        "stage": "input",
        "detected": ATTACK_DETECTED,
    }
    assert fake_backend.fake is not None
    assert fake_backend.fake.bodies == []  # the provider never heard of it
    run = Run.objects.get(pk=answer.run_id)
    assert run.status == "completed"
    assert run.output["customOutputs"]["guardrail"]["stage"] == "input"


def test_a_clean_question_passes_the_input_guardrail(owner_client, make_agent, backend):
    agent = agent_with(make_agent, backend, "HAIP-Prompt_attack-Medium", "HAIP-Profanity")
    backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5})]), Turn(text=["The answer is 15."])
    )
    answer = invoke(owner_client, agent, "invoke-stream", ask("What is 3x5?"))
    assert "15" in answer.final_text
    assert "customOutputs" not in answer.lines[-1]["response"]


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_a_profane_word_split_across_deltas_never_reaches_the_client(
    owner_client, make_agent, fake_backend: Backend, stream: bool
):
    agent = agent_with(make_agent, fake_backend, "HAIP-Profanity")
    fake_backend.script(Turn(text=PROFANE_SPLIT), Turn(text=PROFANE_SPLIT))
    url = f"/v1/agents/{agent.pk}/versions/latest/{'invoke-stream' if stream else 'invoke'}"
    response = owner_client.post(url, ask("How is the answer?"), format="json")
    raw = b"".join(_drain(response)) if stream else response.content
    assert b"this answer is sh" not in raw
    assert b"shit" not in raw
    answer = invoke(owner_client, agent, "invoke-stream" if stream else "invoke", ask("Again?"))
    assert answer.text == DEFAULT_BLOCKED_OUTPUT
    # No span at the output stage: its text is what the guardrail kept from the client.
    assert guardrail_of(answer) == {
        "action": "BLOCKED",
        "name": "HAIP-Profanity",
        "stage": "output",
        "detected": {"kind": "profanity", "detector": "profanity word list", "score": 1.0},
    }
    run = Run.objects.get(pk=answer.run_id)
    assert run.output["customOutputs"]["guardrail"]["stage"] == "output"


def _drain(response: Any) -> list[bytes]:
    from asgiref.sync import async_to_sync

    async def collect() -> list[bytes]:
        return [chunk async for chunk in response.streaming_content]

    return async_to_sync(collect)()


def test_clean_sentences_before_the_block_are_released_and_the_rest_is_replaced(
    owner_client, make_agent, fake_backend: Backend
):
    agent = agent_with(make_agent, fake_backend, "HAIP-Profanity")
    fake_backend.script(Turn(text=["All good so far. ", *PROFANE_SPLIT]))
    answer = invoke(owner_client, agent, "invoke-stream", ask("How is it?"))
    assert answer.text == "All good so far. " + DEFAULT_BLOCKED_OUTPUT


def test_request_guardrails_apply_to_an_agent_without_any(owner_client, make_agent, fake_backend):
    agent = agent_with(make_agent, fake_backend)  # no guardrails of its own
    fake_backend.script(Turn(text=PROFANE_SPLIT))
    unguarded = invoke(owner_client, agent, "invoke", ask("Say it"))
    assert "shit" in unguarded.text

    fake_backend.script(Turn(text=PROFANE_SPLIT))
    guarded = invoke(owner_client, agent, "invoke", ask("Say it", guardrails=["HAIP-Profanity"]))
    assert guarded.text == DEFAULT_BLOCKED_OUTPUT
    assert guardrail_of(guarded)["name"] == "HAIP-Profanity"


def test_tool_call_arguments_are_checked_before_they_are_shown(
    owner_client, make_agent, fake_backend: Backend
):
    agent = make_agent(
        "Shouter",
        "tool",
        config=fake_backend.config(
            {
                "llmModelId": "local.demo-v1",
                "tools": [
                    {
                        "toolType": "function",
                        "name": "clock",
                        "description": "The time in a zone",
                        "funcName": "current_time",
                    }
                ],
                "guardrails": ["HAIP-Profanity"],
            }
        ),
    )
    fake_backend.script(Turn(calls=[Call("clock", {"timezone": "shit"})]))
    answer = invoke(owner_client, agent, "invoke-stream", ask("What time is it?"))
    assert not [line for line in answer.lines if line["type"].endswith("arguments.done")]
    assert answer.text == DEFAULT_BLOCKED_OUTPUT


def test_task_agent_string_inputs_are_checked(owner_client, make_agent, fake_backend: Backend):
    config = fake_backend.config(
        {
            "llmModelId": "local.demo-v1",
            "systemPrompt": "Summarise: {{ text }}",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "guardrails": ["HAIP-Prompt_attack-Medium"],
        }
    )
    agent = make_agent("Summary", "task", config=config)
    answer = invoke(owner_client, agent, "invoke-task", {"inputs": {"text": ATTACK}})
    assert answer.text == DEFAULT_BLOCKED_INPUT
    assert guardrail_of(answer)["stage"] == "input"
    assert fake_backend.fake is not None
    assert fake_backend.fake.bodies == []


def test_blocked_messages_are_configurable(owner_client, make_agent, fake_backend: Backend):
    Guardrail.objects.filter(name="HAIP-Profanity").update(
        blocked_output_message="Let's keep it polite."
    )
    agent = agent_with(make_agent, fake_backend, "HAIP-Profanity")
    fake_backend.script(Turn(text=PROFANE_SPLIT))
    answer = invoke(owner_client, agent, "invoke", ask("How is it?"))
    assert answer.text == "Let's keep it polite."


def test_a_disabled_guardrail_of_the_config_refuses_the_run(owner_client, make_agent, backend):
    agent = agent_with(make_agent, backend, "HAIP-Profanity")
    Guardrail.objects.filter(name="HAIP-Profanity").update(enabled=False)
    answer = invoke(owner_client, agent, "invoke", ask("Hello"))
    assert answer.status == 400
    assert "HAIP-Profanity" in answer.body["detail"]


def test_a_bedrock_guardrail_checks_input_and_output_through_apply_guardrail(
    owner_client, make_agent, bedrock_server
):
    """The model is Bedrock too: one scripted queue serves ConverseStream and
    ApplyGuardrail, so the order of the calls is asserted by the script itself."""
    from tests.fakes.bedrock import Guard, content_filter

    Guardrail.objects.create(
        name="Corp-Bedrock",
        description="Our Bedrock guardrail",
        engine="bedrock",
        engine_config={"guardrailId": "gr-123", "version": "2", "maxRetries": 0},
        blocked_output_message="Withheld by policy.",
    )
    bedrock_server.reset()
    with override_settings(LLM_OFFLINE=False):
        agent = make_agent(
            "Guarded",
            "tool",
            config={**CALCULATOR["config"], "guardrails": ["Corp-Bedrock"]},
        )
        bedrock_server.script(
            Guard(action="NONE"),  # the question
            Turn(text=["You are ", "a fool."]),  # the model's answer …
            Guard(action="GUARDRAIL_INTERVENED", assessments=[content_filter("INSULTS")]),
        )
        answer = invoke(owner_client, agent, "invoke-stream", ask("Be honest with me."))
    assert answer.text == "Withheld by policy."
    assert guardrail_of(answer) == {
        "action": "BLOCKED",
        "name": "Corp-Bedrock",
        "stage": "output",
        "detected": {"kind": "insult", "detector": "Bedrock guardrail", "score": 1.0},
    }
    sources = [b.get("source") for b in bedrock_server.bodies if "source" in b]
    assert sources == ["INPUT", "OUTPUT"]
    assert bedrock_server.guardrails() == [("gr-123", "2"), ("gr-123", "2")]
    assert bedrock_server.bodies[2]["content"] == [{"text": {"text": "You are a fool."}}]
