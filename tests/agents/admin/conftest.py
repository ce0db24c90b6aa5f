"""What the admin's tests share: an OpenAI-compatible model that fails, and an agent on it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from agents.examples import CALCULATOR
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
