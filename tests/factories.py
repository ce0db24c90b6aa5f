from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model

from agents.models import Environment

CALCULATOR_CONFIG: dict[str, Any] = {
    "tools": [
        {
            "toolType": "function",
            "name": "multiply",
            "description": "Multiplies two numbers",
            "funcName": "multiply",
        }
    ],
    "llmModelId": "local.demo-v1",
    "systemPrompt": "You are a helpful assistant with access to various tools.",
}

TASK_CONFIG: dict[str, Any] = {
    "llmModelId": "local.demo-v1",
    "systemPrompt": "Summarise for {{ audience }}: {{ text }}",
    "inputSchema": {
        "type": "object",
        "properties": {"audience": {"type": "string"}, "text": {"type": "string"}},
        "required": ["text"],
    },
}

RAG_CONFIG: dict[str, Any] = {"llmModelId": "local.demo-v1"}

CONFIGS = {"tool": CALCULATOR_CONFIG, "task": TASK_CONFIG, "rag": RAG_CONFIG}


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw")


class EnvironmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Environment

    name = factory.Sequence(lambda n: f"env{n}")
