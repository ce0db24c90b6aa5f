"""The source document's example agents, created by the dev set-up (`make run`), and the
model they run on there."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings

from agentbuilder.openai_profile import openai_profile

CALCULATOR: dict[str, Any] = {
    "name": "Calculator",
    "description": "Math assistant",
    "agentType": "tool",
    "config": {
        "tools": [
            {
                "toolType": "function",
                "name": "multiply",
                "description": "Multiplies two numbers",
                "funcName": "multiply",
            }
        ],
        "llmModelId": "anthropic.claude-3-haiku-20240307-v1:0",
        "systemPrompt": "You are a helpful assistant with access to various tools.",
        "inferenceConfig": {"maxTokens": 4000},
        "guardrails": ["HAIP-Prompt_attack-Medium"],
    },
}

PERSON_EXTRACTOR: dict[str, Any] = {
    "name": "PersonExtractor",
    "description": "Extracts structured information about people",
    "agentType": "tool",
    "config": {
        "tools": [
            {
                "toolType": "structured_output",
                "name": "structured_output",
                "description": "Extracts structured information about a person from text",
                "outputSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Full name of the person"},
                        "age": {"type": "integer", "description": "Age of the person"},
                        "occupation": {
                            "type": "string",
                            "description": "Person's job or profession",
                        },
                    },
                    "required": ["name"],
                },
            }
        ],
        "llmModelId": "anthropic.claude-3-sonnet-20240229-v1:0",
        "systemPrompt": "You are a helpful assistant specialized in extracting structured "
        "information about people from text.",
        "inferenceConfig": {"maxTokens": 4000, "temperature": 0.1},
        "guardrails": ["HAIP-Profanity"],
    },
}

EXAMPLES = [CALCULATOR, PERSON_EXTRACTOR]

DOCUMENT_HELPER: dict[str, Any] = {
    "name": "document-helper",
    "description": "Answers questions from the company documents, with its sources",
    "agentType": "rag",
    "config": {
        # The dev set-up runs with LLM_OFFLINE: the local model serves this id.
        "llmModelId": "amazon.nova-micro-v1:0",
        "hxqlQuery": "SELECT * FROM SysContent",
        "limit": 20,
        "rerankerTopN": 5,
        "inferenceConfig": {"maxTokens": 1000},
    },
}

SUMMARIZER: dict[str, Any] = {
    "name": "summarizer",
    "description": "Summarises a text for the audience it is meant for",
    "agentType": "task",
    "config": {
        "llmModelId": "anthropic.claude-3-haiku-20240307-v1:0",
        "systemPrompt": "Summarise the following text for {{ audience }} in at most "
        "{{ sentences }} sentences.\n\n{{ text }}",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to summarise"},
                "audience": {
                    "type": "string",
                    "enum": ["customers", "engineers", "executives"],
                    "default": "customers",
                },
                "sentences": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            },
            "required": ["text"],
        },
        "inferenceConfig": {"maxTokens": 1000},
    },
}

# What adding an agent in the admin starts from: one working config a pick.
TEMPLATES: dict[str, tuple[str, dict[str, Any]]] = {
    "calculator": ("Calculator: a tool agent with a function tool", CALCULATOR),
    "person-extractor": ("PersonExtractor: structured output", PERSON_EXTRACTOR),
    "document-helper": ("document-helper: a RAG agent over the documents", DOCUMENT_HELPER),
    "summarizer": ("summarizer: a task agent with typed inputs", SUMMARIZER),
}


def _function(name: str, description: str) -> dict[str, Any]:
    return {"toolType": "function", "name": name, "description": description, "funcName": name}


# What `make run` creates: the documentation's examples, with the Calculator given the other
# three operations too, so that a newcomer's "What is 2 plus 3?" is answered by a tool.
DEV_CALCULATOR: dict[str, Any] = {
    **CALCULATOR,
    "config": {
        **CALCULATOR["config"],
        "tools": [
            *CALCULATOR["config"]["tools"],
            _function("add", "Adds two numbers"),
            _function("subtract", "Subtracts the second number from the first"),
            _function("divide", "Divides the first number by the second"),
        ],
    },
}
DEV_EXAMPLES = [DEV_CALCULATOR, PERSON_EXTRACTOR]


OPENAI_SAMPLE_MODEL = "openai/gpt-4o-mini"
OPENAI_PREFIX = "openai/"
# What says AWS is meant: a region or credentials named (a profile, keys, a Bedrock endpoint).
AWS_VARIABLES = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
)


def openai_model_id(name: str) -> str:
    """The catalog id of a model an OpenAI-compatible server calls `name`."""
    return name if name.startswith(OPENAI_PREFIX) else f"{OPENAI_PREFIX}{name}"


def sample_model() -> str | None:
    """The model the samples run on, None for each its own (Bedrock) id: DEFAULT_MODEL if
    set; under LLM_OFFLINE their own (the offline model answers every id); with OPENAI_*
    set and no AWS setting, the OpenAI-compatible server's first OPENAI_MODELS entry (else
    gpt-4o-mini), since their Bedrock ids would fail for want of a region."""
    if settings.DEFAULT_MODEL:
        return str(settings.DEFAULT_MODEL)
    if settings.LLM_OFFLINE or not any(openai_profile()):
        return None
    if any(os.environ.get(name) for name in AWS_VARIABLES):
        return None
    models = settings.OPENAI_MODELS
    return openai_model_id(models[0]) if models else OPENAI_SAMPLE_MODEL


def with_model(example: dict[str, Any], model: str | None) -> dict[str, Any]:
    """`example` with its config on `model` (None: as it is)."""
    if model is None:
        return example
    return {**example, "config": {**example["config"], "llmModelId": model}}
