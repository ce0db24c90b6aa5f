"""The source document's example agents, created by the dev set-up (`make run`)."""

from __future__ import annotations

from typing import Any

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
