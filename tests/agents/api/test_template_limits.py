"""Task prompt templates over their limits, through the HTTP routes: refused with 400 at
`config.systemPrompt` when the template shows it, else a run failed with `template_limit`."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.models import Agent, Run
from tests.support.native import invoke, no_run_in_progress

pytestmark = pytest.mark.django_db
TASK_ROUTES = pytest.mark.parametrize("route", ["invoke-task", "invoke-task-stream"])


def task_config(prompt: str, **properties: str) -> dict[str, Any]:
    return {
        "llmModelId": "local.demo-v1",
        "systemPrompt": prompt,
        "inputSchema": {
            "type": "object",
            "properties": {name: {"type": kind} for name, kind in properties.items()},
        },
    }


def create(client: APIClient, config: dict[str, Any]) -> Any:
    body = {"name": "templated", "description": "d", "agentType": "task", "config": config}
    return client.post("/v1/agents", body, format="json")


SEEN_WHEN_SAVED = {
    "repeated input": (
        task_config("{{ name * 100000000 }}", name="string"),
        "repeating a text or list 100000000 times is over the limit of 1000000 characters",
    ),
    "range": (
        task_config("{% for i in range(10**9) %}{{ i }}{% endfor %}"),
        "range() of 1000000000 numbers is over the limit of 100000 loop iterations",
    ),
    "nested loops": (
        task_config(
            "{% for i in range(1000) %}{% for j in range(1000) %}.{% endfor %}{% endfor %}"
        ),
        "nested loops run 1000000 times, over the limit of 100000 loop iterations",
    ),
    "power": (task_config("{{ 2 ** 100000 }}"), "a power of 2 to 100000 is over 4096 bits"),
    "width": (
        task_config("{{ name|center(10**9) }}", name="string"),
        "center of 1000000000 is over the limit of 1000000",
    ),
}


@pytest.mark.parametrize("case", SEEN_WHEN_SAVED, ids=list(SEEN_WHEN_SAVED))
def test_a_template_over_a_limit_is_refused_when_saved(owner_client: APIClient, case: str) -> None:
    config, message = SEEN_WHEN_SAVED[case]
    response = create(owner_client, config)
    assert response.status_code == 400, response.json()
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "config", "systemPrompt"]
    assert error["msg"] == f"the template is over a limit: {message}"
    assert not Agent.objects.exists()


def test_a_filter_that_cannot_be_bounded_is_refused_when_saved(owner_client: APIClient) -> None:
    response = create(owner_client, task_config("{{ text|striptags }}", text="string"))
    assert response.status_code == 400, response.json()
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "config", "systemPrompt"]
    assert "No filter named 'striptags'" in error["msg"]


def test_loops_and_repetition_within_limits_are_accepted(owner_client: APIClient) -> None:
    prompt = "{% for i in range(100) %}{{ '-' * 80 }}{{ name * 3 }}{% endfor %}{{ 2 ** 64 }}"
    response = create(owner_client, task_config(prompt, name="string"))
    assert response.status_code == 201, response.json()


# ---------------------------------------------------------------- at run time


@pytest.fixture
def repeater(owner_client: APIClient) -> Agent:
    prompt = "Repeat: {{ text * times }}"
    response = create(owner_client, task_config(prompt, text="string", times="integer"))
    assert response.status_code == 201, response.json()
    return Agent.objects.get(pk=response.json()["id"])


@TASK_ROUTES
def test_inputs_that_take_a_template_over_a_limit_fail_the_run(
    route: str, owner_client: APIClient, repeater: Agent
) -> None:
    answer = invoke(owner_client, repeater, route, {"inputs": {"text": "x", "times": 10**8}})

    # Stopped by the count of characters, before the allocation (the message says which
    # limit), not by the clock: no time to measure.
    assert answer.status == 400
    assert answer.body == {
        "detail": "template_limit: the prompt template went over a limit: repeating a text "
        "or list would be over 1000000 characters or items"
    }
    [run] = Run.objects.all()
    assert answer.headers["X-Run-Id"] == str(run.pk)
    assert run.status == "failed"
    assert run.error["code"] == "template_limit"
    assert run.error["message"].startswith("the prompt template went over a limit")
    no_run_in_progress()


@TASK_ROUTES
def test_inputs_within_the_limits_are_answered(
    route: str, owner_client: APIClient, repeater: Agent
) -> None:
    answer = invoke(owner_client, repeater, route, {"inputs": {"text": "ab", "times": 3}})
    assert answer.status == 200
    assert Run.objects.get().status == "completed"


def test_a_template_that_runs_past_its_time_fails_the_run(
    owner_client: APIClient, settings: Any
) -> None:
    settings.TASK_TEMPLATE_MAX_SECONDS = 0.3
    prompt = "{% for i in range(n) %}{{ (text * 20000)|length }}{% endfor %}"
    response = create(owner_client, task_config(prompt, text="string", n="integer"))
    agent = Agent.objects.get(pk=response.json()["id"])

    answer = invoke(owner_client, agent, "invoke-task", {"inputs": {"text": "x" * 40, "n": 99_999}})

    # Within every counted limit, so only the clock stops it (its message); how soon after
    # the deadline is the machine's business, not the test's.
    assert answer.status == 400
    assert answer.body["detail"].endswith("rendering took longer than 0.3 seconds")
    assert Run.objects.get().error["code"] == "template_limit"


def test_a_template_that_fails_on_its_inputs_is_a_400_not_a_500(
    owner_client: APIClient,
) -> None:
    response = create(owner_client, task_config("{{ 100 / n }}", n="integer"))
    agent = Agent.objects.get(pk=response.json()["id"])
    answer = invoke(owner_client, agent, "invoke-task", {"inputs": {"n": 0}})
    assert answer.status == 400
    (error,) = answer.body["detail"]
    assert error["loc"] == ["body", "inputs"]
    assert error["msg"] == "the prompt template failed: ZeroDivisionError: division by zero"
