"""respond (docs/api.md#respond): the evaluation platform's agent HTTP contract
(agents.protocols.respond) over the one run path (agents.protocols.views).

The same invocation as `invoke`, another encoder: every message of the turn (assistant
tool calls, tool results, the final reply) with model, provider, usage and metadata.
"""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.views import ENVIRONMENT
from agentbuilder.db import in_db
from agents.api.views import AGENT_ID, CALL_DEPTH, VERSION_ID

# A run that failed in transport answers the native routes' body (the contract's "hard
# transport failures"), under the shared failure status.
from agents.protocols.native.errors import error_body, failure_status
from agents.protocols.respond.encoder import AgentResponse, TurnEncoder
from agents.protocols.respond.request import AgentRequest, history_messages
from agents.protocols.views import QUEUED_DOC, ProtocolView, queued, run_headers
from agents.runs.background import run_queue
from agents.runs.start import Invocation, invocation_start
from agents.runs.stream import collected_events


class RespondView(ProtocolView):
    protocol = "respond"
    route = "/respond"

    @extend_schema(
        operation_id="agents_respond",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT, CALL_DEPTH],
        request=AgentRequest,
        examples=[
            OpenApiExample(
                "turn",
                value={
                    "messages": [{"role": "user", "content": "What is 3 times 5?"}],
                    "metadata": {"test_case_id": "tc-1", "turn_index": 0},
                },
                request_only=True,
            )
        ],
        responses={200: AgentResponse, **QUEUED_DOC},
        tags=["invoke"],
        summary="All messages of one turn (agent HTTP contract)",
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        body, start = await in_db(self._start)(agentId, versionId)
        if isinstance(start, uuid.UUID):
            return queued(start)
        encoder = TurnEncoder()
        for event in await collected_events(start):
            encoder.encode(event)
        headers = run_headers(start)
        failed = encoder.failed
        if failed is not None:
            status = failure_status(failed.code)
            return Response(error_body(failed), status=status, headers=headers)
        metadata = body.metadata.model_dump(exclude_unset=True) if body.metadata else None
        answer = encoder.response(
            provider=start.spec.provider_name or None,
            run_id=str(start.run_id),
            metadata=metadata,
        )
        return Response(_dump(answer), headers=headers)

    def _start(self, agent_id: str, version_id: str) -> tuple[AgentRequest, Invocation | uuid.UUID]:
        body = self.body(AgentRequest)
        messages = history_messages(body)
        request = self.run_request(
            agent_id, version_id, messages=messages, webhook=body.webhook, stream=False
        )
        if body.background:
            return body, run_queue(request)
        return body, invocation_start(request)


def _dump(answer: AgentResponse) -> dict[str, Any]:
    # exclude_unset: a message carries the fields of its role only (an assistant message
    # of only calls keeps its explicit `content: null`, as OpenAI sends it).
    return answer.model_dump(mode="json", exclude_unset=True)
