"""A2A from the client's side: an agent's URL on a live server, a token, an HTTP session, a
user message, and a task agent whose structured answer is empty."""

from typing import Any

import httpx
from a2a.types import a2a_pb2 as pb

from agents.access.tokens import token_encode

EMPTY_OUTPUT_TASK = {
    "llmModelId": "local.demo-v1",
    "systemPrompt": "Acknowledge: {{ text }}",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    # An object with nothing in it: the structured answer is `{}`.
    "outputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
}


QUESTION = "What is 3 x 5?"


def base(port: int, name: str) -> str:
    return f"http://127.0.0.1:{port}/v1/a2a/{name}"


def tok(user: Any) -> str:
    return token_encode(user_id=user.pk, environment_id=None)[0]


def session(token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=20)


def ask(text: str = QUESTION, context_id: str = "") -> pb.Message:
    return pb.Message(
        message_id="m-1", role=pb.ROLE_USER, parts=[pb.Part(text=text)], context_id=context_id
    )
