"""What the admin's tests share: an OpenAI-compatible model that fails and an agent on it, a
staff user with some permissions, what a browser posts back from a change page, and the
aliases page of an agent with three versions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client, override_settings
from django.urls import reverse

from agents.examples import CALCULATOR
from agents.services.versions import version_add
from tests.factories import CALCULATOR_CONFIG, UserFactory
from tests.fakes.openai import FakeOpenAI

# The Calculator on the fake OpenAI-compatible server, without retries: a scripted failure
# is the run's failure at once.
REMOTE_CALCULATOR: dict[str, Any] = {
    **CALCULATOR["config"],
    "llmModelId": "openai/gpt-4o-mini",
    "inferenceConfig": {"maxRetries": 0},
}


@pytest.fixture
def failing_openai() -> Iterator[FakeOpenAI]:
    """The fake server, with LLM_OFFLINE off; a live server run in this process (the
    browser tests') reads these settings and this environment too."""
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", fake.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        with override_settings(LLM_OFFLINE=False):
            yield fake


def browser_post_data(response: Any, **changes: Any) -> dict[str, Any]:
    """What a browser posts back from an admin change page, with `changes` applied."""
    data: dict[str, Any] = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    for form in forms:
        for name in form.fields:
            value = form[name].value()
            if value is not None:
                data[form.add_prefix(name)] = value
    return {**data, **changes}


def staff_with(*codenames: str) -> Any:
    staff = UserFactory(username="staff", is_staff=True)
    for codename in codenames:
        app_model = codename.split("_", 1)[1]
        perm = Permission.objects.get(codename=codename, content_type__model=app_model)
        staff.user_permissions.add(perm)
    return staff


@pytest.fixture
def calc(make_agent: Any, admin_user: Any) -> Any:
    agent = make_agent("calc")
    for prompt in ("Be terse.", "Be kind."):
        version_add(
            user=admin_user, agent=agent, config={**CALCULATOR_CONFIG, "systemPrompt": prompt}
        )
    return agent


def url(agent: Any) -> str:
    return reverse("admin:agents_agent_aliases", args=[agent.pk])


def post(client: Client, agent: Any, **data: Any) -> Any:
    return client.post(url(agent), data, follow=True)
